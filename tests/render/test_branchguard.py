"""Which branch `generate` renders into a checkout, and when it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.render import branchguard
from ci_tools.render.recipes import header

BRANCHES = ("main", "cuda-12_9")


def test_header_branch_reads_what_header_writes() -> None:
    for branch in (*BRANCHES, "pytorch-2.9-vllm-0.15.1", "a/b"):
        assert branchguard.header_branch(header("catalog.yaml", branch) + "\n{ }\n") == branch
    assert branchguard.header_branch("# written by a person (branch main)\n") is None


def test_recipe_branches_of_a_folder(tmp_path: Path) -> None:
    (tmp_path / "a.nix").write_text(header("catalog.yaml", "main") + "\n", encoding="utf-8")
    (tmp_path / "b.nix").write_text("# hand-written\n", encoding="utf-8")
    (tmp_path / "c.txt").write_text(header("catalog.yaml", "other") + "\n", encoding="utf-8")
    assert branchguard.recipe_branches(tmp_path) == {"main"}
    assert branchguard.recipe_branches(tmp_path / "absent") == frozenset()


@pytest.mark.parametrize(
    ("checked_out", "recipes_of", "default"),
    [
        ("cuda-12_9", {"main"}, "cuda-12_9"),  # a catalog branch: itself
        ("fix-typo", {"cuda-12_9"}, "cuda-12_9"),  # a working branch: its recipes' branch
        ("fix-typo", {"main", "cuda-12_9"}, "main"),  # mixed: no answer but main
        ("fix-typo", {"gone"}, "main"),  # recipes of a branch the catalog lost
        (None, set(), "main"),
    ],
)
def test_default_branch(checked_out: str | None, recipes_of: set[str], default: str) -> None:
    assert branchguard.default_branch(BRANCHES, checked_out, frozenset(recipes_of)) == default


@pytest.mark.parametrize(
    ("rendered", "checked_out", "recipes_of", "refused"),
    [
        ("main", "main", {"main"}, False),
        ("new", "new", {"main"}, False),  # the checklist: a new branch replaces its parent's
        ("main", None, {"cuda-12_9"}, False),  # detached HEAD or no git: nothing to protect
        ("new", "main", {"main"}, True),  # the accident the guard is for
        ("cuda-12_9", "main", set(), True),  # an empty folder on a catalog branch
        ("main", "fix-typo", {"main"}, False),  # a working branch of main
        ("main", "fix-typo", set(), False),
        ("new", "fix-typo", {"main"}, True),  # a working branch of main rendering another
    ],
)
def test_problem(
    rendered: str, checked_out: str | None, recipes_of: set[str], refused: bool
) -> None:
    found = branchguard.problem(
        rendered=rendered,
        checked_out=checked_out,
        catalog_branches=(*BRANCHES, "new"),
        recipes_of=frozenset(recipes_of),
        folder=".flox/pkgs",
    )
    assert (found is not None) is refused
    if found is not None:
        assert f"render branch {rendered}" in found and f"branch is {checked_out}" in found
