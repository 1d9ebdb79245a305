"""The workflow-command escaper: no line ci-tools prints is a command but its own."""

from __future__ import annotations

import io
import sys

import pytest

from ci_tools.base import escape
from tests.fuzz.hostile import COMMANDS, MARKER, obeyed, workflow_commands


@pytest.mark.parametrize("line", COMMANDS)
def test_no_command_survives_neutral(line: str) -> None:
    assert workflow_commands(line), "the payload is a command as written"
    assert not workflow_commands(escape.neutral(line))
    assert MARKER in escape.neutral(line)  # shown, not dropped


@pytest.mark.parametrize(
    "line",
    ["plain text", "\tindented with a tab", "CUDA 12.9 · sm90 ✅", "a::b in the middle", ""],
)
def test_ordinary_lines_pass_unchanged(line: str) -> None:
    assert escape.neutral(line) == line


def test_a_guarded_stream_sees_whole_lines_however_they_are_written() -> None:
    inner = io.StringIO()
    stream = escape.GuardedStream(inner, lambda text: text.replace("SECRET", "***"))
    for chunk in (":", ":error::", MARKER, "\n  #", "#[group]x SECRET\nlast ::x"):
        stream.write(chunk)
    assert inner.getvalue() == f": :error::{MARKER}\n  # #[group]x ***\n"
    stream.finish()
    assert inner.getvalue().endswith("\nlast ::x")
    assert not obeyed(inner.getvalue()) and not workflow_commands(inner.getvalue())


def test_own_commands_pass_as_they_are_on_a_line_of_their_own() -> None:
    inner = io.StringIO()
    stream = escape.GuardedStream(inner, lambda text: text.replace("SECRET", "***"))
    stream.write("half a line")
    escape.write_command(stream, "::notice::done SECRET")
    assert inner.getvalue() == "half a line\n::notice::done ***\n"


def test_guarded_streams_wrap_and_restore_both_streams() -> None:
    before = sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err
    try:
        with escape.guarded_streams(lambda text: text):
            print(f"::error::{MARKER}")
            print(f"##[warning]{MARKER}", file=sys.stderr, end="")
    finally:
        sys.stdout, sys.stderr = before
    assert out.getvalue() == f": :error::{MARKER}\n"
    assert err.getvalue() == f"# #[warning]{MARKER}"
