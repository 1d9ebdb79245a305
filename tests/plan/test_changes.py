"""`ci-tools matrix --since REF` on real git repositories: which stacks a push changed.

The catalog repository is this checkout's catalog and rendered recipes (they import their
builders through path literals); the discovered repository is shaped like
barstoolbluz/build-pytorch (a TorchVision recipe that imports its PyTorch sibling).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ci_tools.plan.checkout import follow_links
from tests.conftest import REPO_ROOT, CliRunner
from tests.gitutil import commit_all, git, init, remove, write

BRANCH = "main"
SM90 = "pytorch-python313-cuda12_8-sm90-avx512"
SM90_VISION = "torchvision-python313-cuda12_8-sm90-avx512"
CPU = "pytorch-python313-cpu-avx2"
ZERO = "0" * 40

# Comments and layout are no change only where Nix parses: without it any byte change counts
# (the documented fallback, never the other way round).
needs_nix = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None,
    reason="compares as Nix only with nix-instantiate (Debian nix-bin); without it bytes count",
)


@pytest.fixture(scope="module")
def template_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = init(tmp_path_factory.mktemp("template") / "repo", BRANCH)
    shutil.copy(REPO_ROOT / "catalog.yaml", root / "catalog.yaml")
    shutil.copytree(REPO_ROOT / ".flox", root / ".flox")
    shutil.copytree(REPO_ROOT / "nix", root / "nix")
    write(root, ".flox/.gitignore", "/run/\n")
    write(root, "README.md", "# builds\n")
    commit_all(root, "base")
    return root


@pytest.fixture
def repo(template_repo: Path, tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(template_repo, root)
    return root


def scheduled(run_cli: CliRunner, root: Path, ref: str = "HEAD~1") -> set[str]:
    result = run_cli("matrix", "--group", "none", "--since", ref, cwd=root)
    assert result.returncode == 0, result.stderr
    return {p for e in json.loads(result.stdout)["include"] for p in e["packages"]}


def everything(run_cli: CliRunner, root: Path) -> set[str]:
    result = run_cli("matrix", "--group", "none", cwd=root)
    return {p for e in json.loads(result.stdout)["include"] for p in e["packages"]}


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def recipe(name: str) -> str:
    return f".flox/pkgs/{name}.nix"


def test_documentation_only_change_schedules_nothing(repo: Path, run_cli: CliRunner) -> None:
    write(repo, "README.md", "# builds, documented\n")
    commit_all(repo, "docs")
    assert scheduled(run_cli, repo) == set()


def test_flox_files_that_are_no_input_schedule_nothing(repo: Path, run_cli: CliRunner) -> None:
    write(repo, ".flox/.gitignore", "/run/\n/cache/\n")
    commit_all(repo, "gitignore")
    assert scheduled(run_cli, repo) == set()


@needs_nix
def test_comments_and_layout_schedule_nothing(repo: Path, run_cli: CliRunner) -> None:
    edit(repo, recipe(SM90), "{ fetchPinnedNixpkgs", "# a new comment\n\n{  fetchPinnedNixpkgs")
    edit(repo, "nix/builders/torch-cuda.nix", "let\n", "let # why\n")
    commit_all(repo, "comments")
    assert scheduled(run_cli, repo) == set()


def test_hash_line_inside_a_nix_string_is_string_content(repo: Path, run_cli: CliRunner) -> None:
    text = (repo / "nix/builders/torch-cpu.nix").read_text(encoding="utf-8")
    assert "''" in text, "the CPU builder has an indented string"
    at = text.index("''") + 2
    (repo / "nix/builders/torch-cpu.nix").write_text(
        text[:at] + "\n    # now part of the script\n" + text[at:], encoding="utf-8"
    )
    commit_all(repo, "string content")
    got = scheduled(run_cli, repo)
    assert CPU in got and f"torchvision-{CPU.removeprefix('pytorch-')}" in got
    assert SM90 not in got


def test_recipe_body_change_schedules_it_and_its_importers(repo: Path, run_cli: CliRunner) -> None:
    edit(repo, recipe(SM90), 'pname = "', 'pname = "x" + "')
    commit_all(repo, "body")
    assert scheduled(run_cli, repo) == {SM90, SM90_VISION}


def test_dependent_recipe_change_schedules_it_alone(repo: Path, run_cli: CliRunner) -> None:
    edit(repo, recipe(SM90_VISION), 'pname = "', 'pname = "x" + "')
    commit_all(repo, "dependent")
    assert scheduled(run_cli, repo) == {SM90_VISION}


def test_builder_change_schedules_exactly_its_importers(repo: Path, run_cli: CliRunner) -> None:
    edit(repo, "nix/builders/torch-cpu.nix", "let\n", "let\n  unused = 1;\n")
    commit_all(repo, "cpu builder")
    got = scheduled(run_cli, repo)
    cpu = {n for n in everything(run_cli, repo) if "-cpu-" in n}
    assert got == cpu


@needs_nix
def test_helper_outside_flox_pkgs_is_an_input(repo: Path, run_cli: CliRunner) -> None:
    write(repo, "nix/builders/flags.nix", '{ extra = "-O2"; }\n')
    edit(
        repo,
        recipe(CPU),
        "{ fetchPinnedNixpkgs",
        "let f = import ../../nix/builders/flags.nix; in\n{ fetchPinnedNixpkgs",
    )
    commit_all(repo, "helper")
    write(repo, "nix/builders/flags.nix", '{ extra = "-O3"; }\n')
    commit_all(repo, "helper edit")
    got = scheduled(run_cli, repo)
    assert CPU in got and SM90 not in got
    write(repo, "nix/builders/flags.nix", '# the flags\n{ extra = "-O3"; }\n')
    commit_all(repo, "helper comment")
    assert scheduled(run_cli, repo) == set()


def test_deleted_import_schedules_and_reports_its_importers(repo: Path, run_cli: CliRunner) -> None:
    remove(repo, recipe(SM90))
    commit_all(repo, "delete the sm90 avx512 pytorch recipe")
    # The catalog still names it: rebuild both, and say what the dependent imports.
    result = run_cli("matrix", "--group", "none", "--since", "HEAD~1", cwd=repo)
    assert result.returncode == 0, result.stderr
    got = {p for e in json.loads(result.stdout)["include"] for p in e["packages"]}
    assert got == {SM90, SM90_VISION}
    assert f"{recipe(SM90_VISION)} references {recipe(SM90)}, which is not in HEAD" in (
        result.stderr
    )


def test_manifest_change_schedules_everything(repo: Path, run_cli: CliRunner) -> None:
    edit(repo, ".flox/env/manifest.toml", "version = 1", "version = 1\n[vars]\nX = '1'")
    commit_all(repo, "manifest")
    assert scheduled(run_cli, repo) == everything(run_cli, repo)


def test_build_fact_in_the_catalog_schedules_that_isa_only(repo: Path, run_cli: CliRunner) -> None:
    # What a test checks is a build fact too, even before the recipes are rendered again.
    edit(
        repo,
        "catalog.yaml",
        "cpuinfo: [avx512f, avx512dq, avx512vl, avx512bw]\n    torch",
        "cpuinfo: [avx512f, avx512dq, avx512vl, avx512bw, avx512cd]\n    torch",
    )
    commit_all(repo, "avx512 cpuinfo")
    got = scheduled(run_cli, repo)
    assert got == {n for n in everything(run_cli, repo) if n.endswith("-avx512")}


def test_descriptive_catalog_field_schedules_nothing(repo: Path, run_cli: CliRunner) -> None:
    edit(repo, "catalog.yaml", "family: Hopper", "family: Hopper (data centre)")
    commit_all(repo, "family")
    assert scheduled(run_cli, repo) == set()


def test_hardware_and_family_edits_regenerated_schedule_nothing(
    repo: Path, run_cli: CliRunner
) -> None:
    """A GPU added to sm80's hardware list, the family renamed, the recipes regenerated (as
    generate --check demands): no recipe changes, so nothing is scheduled."""
    edit(repo, "catalog.yaml", "hardware: [A100, A30]", "hardware: [A100, A30, A800]")
    edit(repo, "catalog.yaml", "family: Ampere datacenter", "family: Ampere (data centre)")
    edit(repo, "catalog.yaml", "description: AVX2\n", "description: AVX2 with FMA3 and F16C\n")
    remove(repo, "README.md")  # no README, no generated tables to keep
    done = run_cli("generate", "--branch", BRANCH, cwd=repo)
    assert done.returncode == 0 and ": 0 written," in done.stdout, done.stdout + done.stderr
    commit_all(repo, "hardware")
    assert scheduled(run_cli, repo) == set()


def test_reverted_change_against_an_older_ref_schedules_nothing(
    repo: Path, run_cli: CliRunner
) -> None:
    edit(repo, recipe(CPU), 'pname = "', 'pname = "x" + "')
    commit_all(repo, "change")
    git(repo, "revert", "--no-edit", "HEAD")
    assert scheduled(run_cli, repo, "HEAD~2") == set()
    assert scheduled(run_cli, repo, "HEAD~1") == {
        CPU,
        f"torchvision-{CPU.removeprefix('pytorch-')}",
    }


@pytest.mark.parametrize("ref", ["no-such-ref", ZERO, "-output=/tmp/x"])
def test_unknown_ref_schedules_the_full_matrix_with_a_notice(
    repo: Path, run_cli: CliRunner, ref: str
) -> None:
    result = run_cli("matrix", f"--since={ref}", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["include"]) == 45
    assert "scheduling the full matrix" in result.stderr


def test_invalid_catalog_at_ref_schedules_the_full_matrix(repo: Path, run_cli: CliRunner) -> None:
    good = (repo / "catalog.yaml").read_text(encoding="utf-8")
    write(repo, "catalog.yaml", "branches: [\n")
    commit_all(repo, "broken")
    write(repo, "catalog.yaml", good)
    commit_all(repo, "fixed")
    result = run_cli("matrix", "--since", "HEAD~1", cwd=repo)
    assert len(json.loads(result.stdout)["include"]) == 45
    assert "the catalog at that commit is invalid" in result.stderr


def test_an_invalid_catalog_at_ref_is_read_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--since` alone finds REF's catalog invalid, and its fallback (every stack) says so:
    one `git show` of it, not one each."""
    from ci_tools import cli
    from ci_tools.base import proc

    good = (repo / "catalog.yaml").read_text(encoding="utf-8")
    write(repo, "catalog.yaml", "branches: [\n")
    commit_all(repo, "broken")
    write(repo, "catalog.yaml", good)
    commit_all(repo, "fixed")
    shows: list[list[str]] = []
    real_run = proc.run

    def counting(argv: list[str], **kwargs: object) -> proc.CommandResult:
        shows.extend([argv] if argv[:2] == ["git", "show"] else [])
        return real_run(argv, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "run", counting)
    monkeypatch.chdir(repo)
    assert cli.main(["matrix", "--since", "HEAD~1"]) == 0
    assert len(json.loads(capsys.readouterr().out)["include"]) == 45
    assert len(shows) == 1, shows


# --- without a catalog, shaped like barstoolbluz/build-pytorch ---------------------------------

TORCH = "{ pkgs ? import <nixpkgs> {} }:\nlet s = ''\n  export X=1\n''; in s\n"
VISION = "{ }:\nlet customPytorch = import ./BASE.nix {}; in customPytorch\n"
BASE = "pytorch-python313-cuda12_8-sm61-avx"
DEP = "torchvision-python313-cuda12_8-sm61-avx"
OTHER = "pytorch-python313-cpu-avx2"


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    root = init(tmp_path / "up", "pytorch-2.8-python313")
    write(root, recipe(BASE), TORCH)
    write(root, recipe(DEP), VISION.replace("BASE", BASE))
    write(root, recipe(OTHER), TORCH)
    write(root, ".flox/env/manifest.toml", "version = 1\n")
    write(root, "README.md", "# builds\n")
    commit_all(root, "base")
    return root


def test_without_catalog_the_importer_of_a_changed_recipe_is_scheduled(
    upstream: Path, run_cli: CliRunner
) -> None:
    write(upstream, recipe(BASE), TORCH.replace("X=1", "X=2"))
    commit_all(upstream, "base change")
    assert scheduled(run_cli, upstream) == {BASE, DEP}


def test_without_catalog_a_hash_line_in_a_string_counts(upstream: Path, run_cli: CliRunner) -> None:
    write(upstream, recipe(OTHER), TORCH.replace("export X=1", "# export X=1"))
    commit_all(upstream, "string")
    assert scheduled(run_cli, upstream) == {OTHER}


def test_without_catalog_renamed_base_reports_its_importer(
    upstream: Path, run_cli: CliRunner
) -> None:
    renamed = "pytorch-python313-cuda12_8-sm61-avx2"
    git(upstream, "mv", recipe(BASE), recipe(renamed))
    commit_all(upstream, "rename")
    result = run_cli("matrix", "--group", "none", "--since", "HEAD~1", cwd=upstream)
    assert result.returncode == 0, result.stderr
    got = {p for e in json.loads(result.stdout)["include"] for p in e["packages"]}
    assert got == {DEP, renamed}
    assert f"{recipe(DEP)} references {recipe(BASE)}, which is not in HEAD" in result.stderr


def test_without_catalog_a_name_outside_the_grammar_is_refused(
    upstream: Path, run_cli: CliRunner
) -> None:
    git(upstream, "mv", recipe(BASE), recipe(BASE + "-cu128"))
    commit_all(upstream, "rename")
    result = run_cli("matrix", "--since", "HEAD~1", cwd=upstream)
    assert result.returncode == 2
    assert f"{recipe(BASE + '-cu128')}" in result.stderr
    assert 'add "cu128" under `builds:` in ci-tools.yaml' in result.stderr
    # Declared in the settings file, it is another build of BASE, scheduled as changed.
    write(upstream, "ci-tools.yaml", "builds: [cu128]\n")
    commit_all(upstream, "settings")
    result = run_cli("matrix", "--group", "none", "--since", "HEAD~2", cwd=upstream)
    assert result.returncode == 0, result.stderr
    assert BASE + "-cu128" in {
        p for e in json.loads(result.stdout)["include"] for p in e["packages"]
    }


LINKED = "pytorch-python313-cpu-avx512"


@pytest.mark.parametrize("target", [f"{OTHER}.nix", f"./{OTHER}.nix", f"../pkgs/{OTHER}.nix"])
def test_without_catalog_a_recipe_linked_to_a_sibling_follows_its_edits(
    upstream: Path, run_cli: CliRunner, target: str
) -> None:
    """Issue 20 item 12: a recipe that is a symlink to a bare sibling name (`x.nix`) hid its
    target's edits from --since: the linked variant was never rebuilt."""
    (upstream / recipe(LINKED)).symlink_to(target)
    commit_all(upstream, "a variant that is another's recipe")
    write(upstream, recipe(OTHER), TORCH.replace("X=1", "X=2"))
    commit_all(upstream, "edit the target")
    assert scheduled(run_cli, upstream) == {OTHER, LINKED}


def test_without_catalog_retargeting_a_link_schedules_it(
    upstream: Path, run_cli: CliRunner
) -> None:
    (upstream / recipe(LINKED)).symlink_to(f"{OTHER}.nix")
    commit_all(upstream, "linked")
    (upstream / recipe(LINKED)).unlink()
    (upstream / recipe(LINKED)).symlink_to(f"{BASE}.nix")
    commit_all(upstream, "linked elsewhere")
    assert scheduled(run_cli, upstream) == {LINKED}


def test_follow_links_stays_in_the_tree() -> None:
    files = {"a/x.nix": "1", "a/y.nix": "2", "a/l1": "l", "a/l2": "l", "a/out": "l", "a/abs": "l"}
    targets = {"a/l1": "l2", "a/l2": "x.nix", "a/out": "../../etc/passwd", "a/abs": "/etc/passwd"}
    targets |= {"a/loop": "loop"}
    assert follow_links(targets, {**files, "a/loop": "l"}) == {
        "a/l1": "a/x.nix",
        "a/l2": "a/x.nix",
        "a/out": None,
        "a/abs": None,
        "a/loop": None,
    }


@needs_nix
def test_both_commits_cost_one_start_of_nix(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """HEAD's files and the few that differ at REF are read from git together and parsed in
    the same call (issue 31: the second start of Nix cost as much as parsing every
    recipe)."""
    from ci_tools import cli
    from ci_tools.base import proc

    edit(repo, recipe(SM90), 'pname = "', 'pname = "x" + "')
    commit_all(repo, "body")
    parses: list[list[str]] = []
    reads: list[list[str]] = []
    shows: list[list[str]] = []
    real_run, real_run_bytes, real_start = proc.run, proc.run_bytes, proc.start

    def counting(argv: list[str], **kwargs: object) -> proc.CommandResult:
        if argv[0] == "nix-instantiate" and "--parse" in argv:
            parses.append(argv[argv.index("--") + 1 :])
        shows.extend([argv] if argv[:2] == ["git", "show"] else [])
        return real_run(argv, **kwargs)  # type: ignore[arg-type]

    def counting_bytes(argv: list[str], **kwargs: object) -> proc.BytesResult:
        reads.append(argv)
        return real_run_bytes(argv, **kwargs)  # type: ignore[arg-type]

    def counting_start(argv: list[str], **kwargs: object) -> proc.Running:
        # Only Nix's parse is ever started early; `--since` alone starts none (one would
        # count here, and fail the one-start assertion below).
        parses.append(argv[argv.index("--") + 1 :])
        return real_start(argv, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "run", counting)
    monkeypatch.setattr(proc, "run_bytes", counting_bytes)
    monkeypatch.setattr(proc, "start", counting_start)
    monkeypatch.chdir(repo)
    assert cli.main(["matrix", "--group", "none", "--since", "HEAD~1"]) == 0
    got = {p for e in json.loads(capsys.readouterr().out)["include"] for p in e["packages"]}
    assert got == {SM90, SM90_VISION}
    assert len(parses) == 1, parses
    assert reads == [["git", "cat-file", "--batch"]]  # both commits' files in one read
    # The changed recipe twice (one version a commit), in folders of their own.
    assert sum(path.endswith(recipe(SM90)) for path in parses[0]) == 2
    # Only the stacks the edit may have changed are fingerprinted (`unchanged`): the two
    # recipes' versions and the shared Nix code, none of the other recipes.
    parsed_recipes = {p.split("/", 1)[1] for p in parses[0] if "/.flox/pkgs/" in f"/{p}"}
    assert parsed_recipes == {recipe(SM90), recipe(SM90_VISION)}, sorted(parsed_recipes)
    # The catalog's blob at REF is the file the plan loaded: REF's text is not asked for.
    assert shows == []
