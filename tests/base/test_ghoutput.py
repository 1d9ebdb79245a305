"""Step outputs and notices in GitHub's formats."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from ci_tools.base import ghoutput
from ci_tools.base.errors import InputError


def test_single_line_values_use_name_equals_value() -> None:
    text = ghoutput.format_outputs({"count": "3", "matrix-0": '{"include":[]}'})
    assert text == 'count=3\nmatrix-0={"include":[]}\n'


def test_multi_line_values_use_a_random_delimiter() -> None:
    text = ghoutput.format_outputs({"notes": "a\nb"})
    match = re.fullmatch(r"notes<<(ghadelimiter_[0-9a-f]{32})\na\nb\n\1\n", text)
    assert match is not None
    assert text != ghoutput.format_outputs({"notes": "a\nb"})


def test_append_keeps_what_earlier_steps_wrote(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_text("before=1\n")
    ghoutput.append_outputs(path, {"count": "0"})
    assert path.read_text() == "before=1\ncount=0\n"


def test_unwritable_output_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot write the step outputs"):
        ghoutput.append_outputs(tmp_path / "missing-dir" / "out", {"count": "0"})


def test_output_path_needs_the_variable() -> None:
    with pytest.raises(InputError, match=r"\$GITHUB_OUTPUT"):
        ghoutput.output_path({})
    assert ghoutput.output_path({"GITHUB_OUTPUT": "/x"}) == Path("/x")


def test_notices_are_annotations_only_under_actions() -> None:
    stream = io.StringIO()
    ghoutput.notice("50% done\nnext", {"GITHUB_ACTIONS": "true"}, stream)
    ghoutput.notice("plain", {}, stream)
    ghoutput.warning("careful", {"GITHUB_ACTIONS": "true"}, stream)
    assert stream.getvalue().splitlines() == [
        "::notice::50%25 done%0Anext",
        "ci-tools: notice: plain",
        "::warning::careful",
    ]
