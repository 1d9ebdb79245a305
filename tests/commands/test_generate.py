"""`ci-tools generate` end to end, as a user runs it: counts, --check, pruning, refusals."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.render import recipes
from tests import gitutil
from tests.conftest import CliRunner

HAND_WRITTEN = "{ pinnedPkgs ? null }:\n# written by a person\nnull\n"


@pytest.fixture
def repo(tmp_path: Path, repo_root: Path) -> Path:
    """A copy of the parts of the repository that generate reads and writes."""
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(repo_root / "catalog.yaml", copy)
    shutil.copy(repo_root / "README.md", copy)
    shutil.copytree(repo_root / "docs", copy / "docs")
    shutil.copytree(repo_root / "nix", copy / "nix")
    shutil.copytree(repo_root / ".flox" / "pkgs", copy / ".flox" / "pkgs")
    return copy


def _snapshot(directory: Path) -> dict[str, str]:
    return {
        p.relative_to(directory).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("branch", "pytorch", "torchvision"),
    [("main", 44 + 1, 44), ("cuda-12_9", 57 + 1, 57), ("cuda-13_0", 59 + 1, 4)],
)
def test_counts_per_branch(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, branch: str, pytorch: int, torchvision: int
) -> None:
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    out = tmp_path / "out"
    result = run_cli("generate", "--branch", branch, "--out", str(out))
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.glob("*.nix"))
    assert sum(n.startswith("pytorch-") for n in names) == pytorch
    assert sum(n.startswith("torchvision-") for n in names) == torchvision
    assert len(names) == pytorch + torchvision
    # Recipes only: shared Nix lives in nix/, since every folder under .flox/pkgs/ would be a
    # flox package set.
    assert [p.name for p in out.iterdir() if p.is_dir()] == []
    assert f"branch {branch}: {pytorch + torchvision} recipes in {out}:" in result.stdout
    # A run into another directory leaves the repository's README alone.
    assert (repo_root / "README.md").read_text(encoding="utf-8") == readme
    again = run_cli("generate", "--branch", branch, "--out", str(out), "--check")
    assert again.returncode == 0, again.stderr


def test_the_repository_is_current(run_cli: CliRunner, repo_root: Path) -> None:
    """The committed .flox/pkgs and README tables are what the catalog renders."""
    result = run_cli("generate", "--check", cwd=repo_root)
    assert result.returncode == 0, result.stderr


def test_check_names_a_hand_edited_recipe_and_generate_repairs_it(
    run_cli: CliRunner, repo: Path
) -> None:
    recipe = repo / ".flox/pkgs/pytorch-python313-cuda12_8-sm90-avx512.nix"
    original = recipe.read_text(encoding="utf-8")
    recipe.write_text(original.replace('"9.0"', '"9.0a"'), encoding="utf-8")
    before = _snapshot(repo)

    check = run_cli("generate", "--check", cwd=repo)
    assert check.returncode == 1
    assert "stale: .flox/pkgs/pytorch-python313-cuda12_8-sm90-avx512.nix" in check.stderr
    assert "ci-tools generate --branch main" in check.stderr
    assert _snapshot(repo) == before  # --check writes nothing

    fix = run_cli("generate", cwd=repo)
    assert fix.returncode == 0, fix.stderr
    assert "1 written" in fix.stdout
    assert recipe.read_text(encoding="utf-8") == original


def test_check_names_missing_and_extra_and_generate_prunes(run_cli: CliRunner, repo: Path) -> None:
    pkgs = repo / ".flox/pkgs"
    (pkgs / "pytorch-python313-cpu-avx2.nix").unlink()
    header = (pkgs / "pytorch-python313-cpu-avx512.nix").read_text(encoding="utf-8")
    (pkgs / "pytorch-python313-cuda12_8-sm75-avx2.nix").write_text(header, encoding="utf-8")
    # A generated builder left under .flox/pkgs/lib/ by the old layout is pruned.
    (pkgs / "lib").mkdir(exist_ok=True)
    (pkgs / "lib" / "old-builder.nix").write_text(header, encoding="utf-8")
    (pkgs / "hand-written.nix").write_text(HAND_WRITTEN, encoding="utf-8")

    check = run_cli("generate", "--check", cwd=repo)
    assert check.returncode == 1
    assert "missing: .flox/pkgs/pytorch-python313-cpu-avx2.nix" in check.stderr
    assert "extra: .flox/pkgs/pytorch-python313-cuda12_8-sm75-avx2.nix" in check.stderr
    assert "extra: .flox/pkgs/lib/old-builder.nix" in check.stderr
    assert "hand-written" not in check.stderr

    result = run_cli("generate", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "1 written" in result.stdout and "2 removed" in result.stdout
    assert (pkgs / "pytorch-python313-cpu-avx2.nix").is_file()
    assert not (pkgs / "pytorch-python313-cuda12_8-sm75-avx2.nix").exists()
    assert not (pkgs / "lib" / "old-builder.nix").exists()
    assert (pkgs / "hand-written.nix").read_text(encoding="utf-8") == HAND_WRITTEN


def test_a_file_without_header_is_never_overwritten(run_cli: CliRunner, repo: Path) -> None:
    pkgs = repo / ".flox/pkgs"
    (pkgs / "pytorch-python313-cpu-avx2.nix").write_text(HAND_WRITTEN, encoding="utf-8")
    (pkgs / "pytorch-python313-cpu-avx512.nix").unlink()
    before = _snapshot(repo)

    result = run_cli("generate", cwd=repo)
    assert result.returncode == 2
    assert ".flox/pkgs/pytorch-python313-cpu-avx2.nix" in result.stderr
    assert "generated-file header" in result.stderr
    assert "Traceback" not in result.stderr
    assert _snapshot(repo) == before  # refused before writing anything

    check = run_cli("generate", "--check", cwd=repo)
    assert check.returncode == 1
    assert "no header" in check.stderr and "pytorch-python313-cpu-avx2.nix" in check.stderr


def test_broken_catalog_names_file_and_line_and_writes_nothing(
    run_cli: CliRunner, repo: Path
) -> None:
    catalog = repo / "catalog.yaml"
    lines = catalog.read_text(encoding="utf-8").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if line.strip().startswith("sm86: *six"))
    lines[number - 1] = lines[number - 1].replace("sm86", "sm87")
    catalog.write_text("".join(lines), encoding="utf-8")
    out = repo / "out"

    result = run_cli("generate", "--out", str(out), cwd=repo)
    assert result.returncode == 2
    assert f"catalog.yaml:{number}:" in result.stderr
    assert "sm87" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_the_recipe_templates_are_ci_tools_own_not_the_checkout(
    run_cli: CliRunner, repo: Path
) -> None:
    """Templates are package data (issue 30 item 1): a checkout without them generates, and a
    stray `templates/` there is not read (the old code read it and failed here)."""
    (repo / "templates/pkgs").mkdir(parents=True)
    (repo / "templates/pkgs/torch-cuda-variant.nix.j2").write_text(
        "{% endif %}\n", encoding="utf-8"
    )
    result = run_cli("generate", "--out", str(repo / "out"), cwd=repo)
    assert result.returncode == 0, result.stderr
    assert _snapshot(repo / "out") == _snapshot(repo / ".flox/pkgs")


def test_unknown_branch_lists_the_known_ones(run_cli: CliRunner, repo: Path) -> None:
    result = run_cli("generate", "--branch", "cuda-99_0", cwd=repo)
    assert result.returncode == 2
    assert "cuda-99_0" in result.stderr
    assert "main, cuda-12_9, cuda-13_0" in result.stderr


def test_missing_catalog(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("generate", cwd=tmp_path)
    assert result.returncode == 2
    assert "no catalog: `generate` renders recipes from catalog.yaml" in result.stderr


def test_stale_readme_block(run_cli: CliRunner, repo: Path) -> None:
    readme = repo / "docs" / "reference.md"
    original = readme.read_text(encoding="utf-8")
    readme.write_text(original.replace("| sm90 | 9.0 |", "| sm90 | 9.1 |"), encoding="utf-8")

    check = run_cli("generate", "--check", cwd=repo)
    assert check.returncode == 1
    assert "stale: docs/reference.md" in check.stderr

    result = run_cli("generate", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "updated docs/reference.md" in result.stdout
    assert readme.read_text(encoding="utf-8") == original


def test_stale_key_reference(run_cli: CliRunner, repo: Path) -> None:
    """The key reference follows the declarations: a row edited by hand is stale."""
    readme = repo / "docs" / "reference.md"
    original = readme.read_text(encoding="utf-8")
    row = next(line for line in original.splitlines() if line.startswith("| `preflight.flox` |"))
    readme.write_text(original.replace(row + "\n", ""), encoding="utf-8")

    check = run_cli("generate", "--check", cwd=repo)
    assert check.returncode == 1
    assert "stale: docs/reference.md" in check.stderr

    assert run_cli("generate", cwd=repo).returncode == 0
    assert readme.read_text(encoding="utf-8") == original


def test_readme_without_the_key_reference_is_bad_input(run_cli: CliRunner, repo: Path) -> None:
    readme = repo / "docs" / "reference.md"
    readme.write_text(
        readme.read_text(encoding="utf-8").replace("<!-- BEGIN generated: keys -->\n", ""),
        encoding="utf-8",
    )
    result = run_cli("generate", "--check", cwd=repo)
    assert result.returncode == 2
    assert "README.md and docs/*.md: no generated block 'keys'" in result.stderr


def test_readme_prose_outside_the_blocks_is_kept(run_cli: CliRunner, repo: Path) -> None:
    readme = repo / "docs" / "reference.md"
    text = readme.read_text(encoding="utf-8") + "\nA paragraph a person wrote.\n"
    readme.write_text(text, encoding="utf-8")
    result = run_cli("generate", "--check", cwd=repo)
    assert result.returncode == 0, result.stderr


def test_readme_without_markers_is_bad_input(run_cli: CliRunner, repo: Path) -> None:
    readme = repo / "docs" / "reference.md"
    readme.write_text(
        readme.read_text(encoding="utf-8").replace("<!-- END generated: gpus -->\n", ""),
        encoding="utf-8",
    )
    result = run_cli("generate", cwd=repo)
    assert result.returncode == 2
    assert "README.md and docs/*.md: no generated block 'gpus'" in result.stderr


def test_blocks_may_sit_in_the_readme_or_a_docs_page(run_cli: CliRunner, repo: Path) -> None:
    """Each block is kept current wherever it sits, once across the README and docs/; a
    block in two documents is bad input naming both."""
    reference = repo / "docs" / "reference.md"
    text = reference.read_text(encoding="utf-8")
    start = text.index("<!-- BEGIN generated: isas -->")
    end = text.index("<!-- END generated: isas -->") + len("<!-- END generated: isas -->\n")
    block = text[start:end]
    reference.write_text(text[:start] + text[end:], encoding="utf-8")
    readme = repo / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + "\n" + block, encoding="utf-8")
    assert run_cli("generate", "--check", cwd=repo).returncode == 0

    stale = block.replace("| `avx2` |", "| `avx3` |")
    assert stale != block
    readme.write_text(readme.read_text(encoding="utf-8").replace(block, stale), encoding="utf-8")
    check = run_cli("generate", "--check", cwd=repo)
    assert check.returncode == 1
    assert "stale: README.md" in check.stderr and "docs/reference.md" not in check.stderr

    (repo / "docs" / "other.md").write_text(block, encoding="utf-8")
    twice = run_cli("generate", "--check", cwd=repo)
    assert twice.returncode == 2
    assert "README.md, docs/other.md: 2 generated block 'isas'" in twice.stderr


# --- issue 20: hostile checkouts and neighbours -----------------------------------------------


def test_a_committed_staging_journal_is_not_obeyed_by_a_fresh_clone(
    run_cli: CliRunner, repo: Path, tmp_path: Path
) -> None:
    """Item 1: a fresh clone plus `generate` planted an executable .git/hooks/pre-commit."""
    staging = repo / ".flox" / "pkgs" / ".ci-tools-staging"
    staging.mkdir()
    (staging / "0.new").write_text("#!/bin/sh\necho pwned\n", encoding="utf-8")
    journal = '{"writes": [["0.new", "../../.git/hooks/pre-commit"]], "deletes": ["../../nix"]}'
    (staging / "journal.json").write_text(journal, encoding="utf-8")
    gitutil.init(repo)
    gitutil.commit_all(repo, "a branch with a planted journal")
    clone = tmp_path / "clone"
    gitutil.git(tmp_path, "clone", "-q", str(repo), str(clone))
    check = run_cli("generate", "--branch", "main", "--check", cwd=clone)
    assert check.returncode == 1
    assert "left by an interrupted generate: .flox/pkgs/.ci-tools-staging" in check.stderr
    result = run_cli("generate", "--branch", "main", cwd=clone)
    assert result.returncode == 0, result.stderr
    assert "without obeying its journal" in result.stdout
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    assert (clone / "nix").is_dir()
    assert run_cli("generate", "--branch", "main", "--check", cwd=clone).returncode == 0


def test_a_lib_folder_linked_to_another_checkout_is_never_pruned(
    run_cli: CliRunner, repo: Path, tmp_path: Path
) -> None:
    """Item 2: with .flox/pkgs/lib a link to another checkout, generate deleted its recipes."""
    other = tmp_path / "other-checkout"
    shutil.copytree(repo / ".flox" / "pkgs", other)
    before = _snapshot(other)
    (repo / ".flox" / "pkgs" / "lib").symlink_to(other)
    result = run_cli("generate", "--branch", "main", cwd=repo)
    assert result.returncode == 2
    assert f".flox/pkgs/lib/{sorted(before)[0]}: leads to {other.resolve()}" in result.stderr
    assert _snapshot(other) == before


def test_an_output_folder_linked_out_of_the_checkout_is_refused(
    run_cli: CliRunner, repo: Path, tmp_path: Path
) -> None:
    """Item 2: with .flox/pkgs itself a link, generate wrote and deleted outside the repository."""
    outside = tmp_path / "outside"
    shutil.move(repo / ".flox" / "pkgs", outside)
    (outside / "stale.nix").write_text(recipes.header("catalog.yaml", "x"), encoding="utf-8")
    (repo / ".flox" / "pkgs").symlink_to(outside)
    before = _snapshot(outside)
    result = run_cli("generate", "--branch", "cuda-13_0", cwd=repo)
    assert result.returncode == 2
    assert f"leads to {outside.resolve()}" in result.stderr
    assert _snapshot(outside) == before
    # Named with --out, a folder behind a link is the user's choice, and written.
    named = run_cli("generate", "--branch", "cuda-13_0", "--out", ".flox/pkgs", cwd=repo)
    assert named.returncode == 0, named.stderr
    assert not (outside / "stale.nix").exists()


def test_a_second_generate_waits_for_the_first(run_cli: CliRunner, repo: Path) -> None:
    """Item 9: concurrent runs on one folder left it matching no branch, or exited 2."""
    out = repo / ".flox" / "pkgs"
    code = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    generate = [sys.executable, "-m", "ci_tools", "generate", "--branch", "cuda-12_9"]
    with subprocess.Popen(
        [sys.executable, "-c", code, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with subprocess.Popen(
            generate, cwd=repo, env=env, stdout=subprocess.PIPE, text=True
        ) as second:
            assert second.stdout is not None
            waiting = second.stdout.readline()
            holder.stdin.write("done\n")
            holder.stdin.flush()
            rest, _ = second.communicate(timeout=120)
    assert waiting == "generate: waiting for another ci-tools run to finish writing .flox/pkgs\n"
    assert second.returncode == 0, rest
    assert run_cli("generate", "--branch", "cuda-12_9", "--check", cwd=repo).returncode == 0
