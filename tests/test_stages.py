"""The package reads as the pipeline: each stage imports only the stages before it.

    base <- catalog <- render | plan | host <- build <- ship | page <- commands, cli

`ALLOWED` is the rule the README's map of the tree states; every import in `ci_tools/`, at
module level or inside a function, is held to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "ci_tools"
ALLOWED: dict[str, frozenset[str]] = {
    "base": frozenset({"base"}),
    "catalog": frozenset({"base", "catalog"}),
    "render": frozenset({"base", "catalog", "render"}),
    "plan": frozenset({"base", "catalog", "plan"}),
    "host": frozenset({"base", "catalog", "host"}),
    "build": frozenset({"base", "catalog", "build"}),
    "ship": frozenset({"base", "catalog", "build", "ship"}),
    "page": frozenset({"base", "catalog", "host", "build", "page"}),
}
TOP = frozenset({"__init__", "__main__", "cli", "commands"})


def _stage(parts: tuple[str, ...]) -> str:
    return parts[0].removesuffix(".py")


def _imported_stages(path: Path) -> set[tuple[str, int]]:
    out: set[tuple[str, int]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
            if node.module == "ci_tools":
                modules = [f"ci_tools.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        for module in modules:
            parts = module.split(".")
            if parts[0] == "ci_tools" and len(parts) > 1:
                out.add((parts[1], node.lineno))
    return out


def test_every_module_belongs_to_a_stage_or_the_top() -> None:
    for path in PACKAGE.rglob("*.py"):
        stage = _stage(path.relative_to(PACKAGE).parts)
        assert stage in ALLOWED or stage in TOP, f"{path}: no stage folder"


def test_no_import_runs_back_up_a_stage() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        stage = _stage(path.relative_to(PACKAGE).parts)
        if stage in TOP:
            continue
        for imported, line in _imported_stages(path):
            if imported not in ALLOWED[stage]:
                wrong.append(f"{path.relative_to(REPO_ROOT)}:{line}: {stage} imports {imported}")
    assert not wrong, "\n".join(sorted(wrong))


def test_the_rule_catches_a_backward_import(tmp_path: Path) -> None:
    module = tmp_path / "x.py"
    module.write_text("def f():\n    from ci_tools.ship import release\n", encoding="utf-8")
    assert _imported_stages(module) == {("ship", 2)}
    assert "ship" not in ALLOWED["plan"]
