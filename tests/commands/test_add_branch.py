"""The manual's "Adding a branch" checklist (docs/catalog.md), run line by line on a scratch repository.

The lines come from the manual itself, so the checklist and this test cannot drift apart.
The editor step is a real edit: EDITOR is a script that adds the branch to catalog.yaml.
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, CliRunner
from tests.gitutil import commit_all, git, git_env, init

NEW = "pytorch-2.8-python312"
NEW_BRANCH = f"""
  {NEW}:
    versions: {{pytorch: "2.8.0", torchvision: "0.23.0"}}
    cuda: "12.8"
    python: ["3.12"]
    min_driver: 550
    nixpkgs: {{rev: fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3}}
    cuda_packages: cudaPackages_12_8
    variants:
      pytorch:
        cpu: [avx2, armv9]
        gpu:
          sm90: [avx512, armv9]
      torchvision:
        cpu: [avx2]
        gpu:
          sm90: [avx512]
"""
NEW_RECIPES = {
    f"{package}-python312-{suffix}.nix"
    for package, suffixes in {
        "pytorch": ("cpu-avx2", "cpu-armv9", "cuda12_8-sm90-avx512", "cuda12_8-sm90-armv9"),
        "torchvision": ("cpu-avx2", "cuda12_8-sm90-avx512"),
    }.items()
    for suffix in suffixes
}


def checklist() -> list[str]:
    """The commands of the "Adding a branch" code block, comments removed."""
    text = (REPO_ROOT / "docs" / "catalog.md").read_text(encoding="utf-8")
    section = text.split("## Adding a branch\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None, "docs/catalog.md's Adding a branch section has no bash block"
    return [line.split("  # ")[0].strip() for line in block[1].splitlines() if line.strip()]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A build repository on `main`: this one's catalog, recipes, Nix, workflows."""
    repo = init(tmp_path / "repo")
    for name in ("catalog.yaml", "runners.yaml", "README.md"):
        shutil.copy(REPO_ROOT / name, repo / name)
    for folder in ("docs", "nix", ".flox/pkgs", ".flox/env", ".github/workflows"):
        shutil.copytree(REPO_ROOT / folder, repo / folder)
    commit_all(repo, "main")
    return repo


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """`ci-tools` on PATH (this checkout's), and an EDITOR that adds the branch."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "ci-tools"
    tool.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ci_tools "$@"\n', encoding="utf-8")
    editor = bindir / "add-branch"
    editor.write_text(
        '#!/bin/sh\nprintf "%s" "$NEW_BRANCH" >> "$1"\n',
        encoding="utf-8",
    )
    for script in (tool, editor):
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = git_env()
    env.update(
        PATH=f"{bindir}:{env['PATH']}",
        PYTHONPATH=str(REPO_ROOT),
        EDITOR=str(editor),
        NEW_BRANCH=NEW_BRANCH,
    )
    return env


def run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def recipes(repo: Path) -> set[str]:
    return {p.name for p in (repo / ".flox/pkgs").glob("*.nix")}


def test_the_checklist_adds_a_branch_and_leaves_main_alone(
    scratch: Path, shell_env: dict[str, str], run_cli: CliRunner
) -> None:
    lines = checklist()
    assert len(lines) == 5 and "generate" in lines[2] and "sync-workflows" in lines[3]
    main_recipes = recipes(scratch)
    for line in lines:
        done = run(line, scratch, shell_env)
        assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"

    # The new branch holds its own recipes and workflows, all committed and current.
    assert git(scratch, "rev-parse", "--abbrev-ref", "HEAD") == NEW
    assert git(scratch, "status", "--porcelain") == ""
    assert recipes(scratch) == NEW_RECIPES
    for workflow in ("ci.yml", "release.yml"):
        assert NEW in (scratch / ".github/workflows" / workflow).read_text(encoding="utf-8")
    for check in (("generate", "--check"), ("sync-workflows", "--check")):
        done = run_cli(*check, cwd=scratch)
        assert done.returncode == 0, done.stdout + done.stderr

    # main is untouched: its recipes are its own and still current.
    git(scratch, "switch", "-q", "main")
    assert recipes(scratch) == main_recipes
    done = run_cli("generate", "--check", cwd=scratch)
    assert done.returncode == 0 and "branch main" in done.stdout, done.stderr


def test_generate_on_another_branch_is_refused_naming_both(
    scratch: Path, shell_env: dict[str, str], run_cli: CliRunner
) -> None:
    """The mistake the checklist prevents: the new branch rendered while main is checked out."""
    assert run(checklist()[1], scratch, shell_env).returncode == 0  # the catalog edit, on main
    before = {p: p.read_bytes() for p in (scratch / ".flox/pkgs").iterdir()}
    done = run_cli("generate", "--branch", NEW, cwd=scratch)
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert f"render branch {NEW} into .flox/pkgs/" in message
    assert "checked-out git branch is main" in message
    assert f"`git switch -c {NEW}`" in message and "--out DIR" in message
    assert "Traceback" not in done.stderr
    assert {p: p.read_bytes() for p in (scratch / ".flox/pkgs").iterdir()} == before

    # --check writes nothing, and --out renders elsewhere: neither is refused.
    assert run_cli("generate", "--branch", NEW, "--check", cwd=scratch).returncode == 1
    out = scratch.parent / "elsewhere"
    done = run_cli("generate", "--branch", NEW, "--out", str(out), cwd=scratch)
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.glob("*.nix")} == NEW_RECIPES
    # An explicit --out that is the repository's own recipe folder is the same as none.
    done = run_cli("generate", "--branch", NEW, "--out", ".flox/pkgs", cwd=scratch)
    assert done.returncode == 2


def test_a_working_branch_renders_the_branch_its_recipes_are(
    scratch: Path, run_cli: CliRunner
) -> None:
    """A pull request's branch off cuda-12_9 is not in the catalog: generate renders cuda-12_9."""
    git(scratch, "switch", "-q", "-c", "cuda-12_9")
    assert run_cli("generate", cwd=scratch).returncode == 0
    commit_all(scratch, "cuda-12_9")
    git(scratch, "switch", "-q", "-c", "fix-typo")
    done = run_cli("generate", cwd=scratch)
    assert done.returncode == 0 and "branch cuda-12_9" in done.stdout, done.stderr
    assert run_cli("generate", "--branch", "cuda-12_9", cwd=scratch).returncode == 0
    # ... but not another branch's, which would replace them.
    done = run_cli("generate", "--branch", "main", cwd=scratch)
    assert done.returncode == 2 and "holds the recipes of cuda-12_9" in done.stderr
