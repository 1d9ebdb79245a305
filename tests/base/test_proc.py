"""The external-command wrapper."""

from __future__ import annotations

import sys

import pytest

from ci_tools.base import proc
from ci_tools.base.errors import InputError


def test_missing_tool_is_bad_input_naming_it() -> None:
    with pytest.raises(proc.ToolMissingError, match="`flox` was not found on PATH"):
        proc.run(["flox", "--version"], env={"PATH": "/nonexistent"})


def test_run_captures_output_and_exit_code() -> None:
    result = proc.run([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"])
    assert result.returncode == 3
    assert result.stdout.strip() == "out"
    assert not result.ok


def test_run_times_out_without_raising() -> None:
    result = proc.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert result.timed_out
    assert not result.ok


def test_stream_passes_lines_and_keeps_the_tail() -> None:
    seen: list[str] = []
    result = proc.stream(
        [sys.executable, "-c", "import sys\nfor i in range(10): print(i)\nsys.exit(1)"],
        on_line=seen.append,
        keep_lines=3,
    )
    assert seen == [str(i) for i in range(10)]
    assert result.stdout == "7\n8\n9"
    assert result.returncode == 1


def test_tool_missing_is_an_input_error() -> None:
    assert issubclass(proc.ToolMissingError, InputError)
