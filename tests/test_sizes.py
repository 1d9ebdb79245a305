"""Small modules with one job: no module over 400 lines, no function over 60.

Every Python file under ci_tools/ and benchmarks/ is held to it. A
function's length runs from its `def` line to its last line (decorators aside, docstring and
nested functions included); a nested function is also measured on its own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO_ROOT

ROOTS = ("ci_tools", "benchmarks")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def offences(path: Path, shown: str) -> Iterator[str]:
    """`shown:line: what` for the module and each function of `path` over the limits."""
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        yield f"{shown}:1: module is {lines} lines (at most {MAX_MODULE_LINES})"
    for node in ast.walk(ast.parse(text, filename=shown)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield (
                    f"{shown}:{node.lineno}: function {node.name} is {length} lines "
                    f"(at most {MAX_FUNCTION_LINES})"
                )


def _modules() -> list[Path]:
    return sorted(p for root in ROOTS for p in (REPO_ROOT / root).rglob("*.py"))


def _shown(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def test_every_module_and_function_is_small() -> None:
    found = [offence for path in _modules() for offence in offences(path, _shown(path))]
    assert not found, "split these by job:\n" + "\n".join(found)


def test_the_roots_hold_modules() -> None:
    shown = {_shown(p).split("/")[0] for p in _modules()}
    assert shown == {"ci_tools", "benchmarks"}


def _function(name: str, body_lines: int) -> str:
    return f"def {name}() -> None:\n" + "    x = 1\n" * body_lines


def test_limits_are_inclusive_and_offences_say_where(tmp_path: Path) -> None:
    ok = tmp_path / "ok.py"
    ok.write_text(_function("fits", 59) + "\n" * (MAX_MODULE_LINES - 60))
    assert len(ok.read_text().splitlines()) == MAX_MODULE_LINES
    assert list(offences(ok, "ok.py")) == []
    big = tmp_path / "big.py"
    nested = "class C:\n    def method(self) -> None:\n" + "        y = 2\n" * 60
    big.write_text("\n" * 3 + _function("long", 60) + nested + "\n" * 400)
    assert list(offences(big, "pkg/big.py")) == [
        "pkg/big.py:1: module is 526 lines (at most 400)",
        "pkg/big.py:4: function long is 61 lines (at most 60)",
        "pkg/big.py:66: function method is 61 lines (at most 60)",
    ]
