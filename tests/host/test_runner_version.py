"""ci_tools/host/runner_version.py: the Actions runner's version, as Runner.Listener prints it.

`Runner.Listener --version` writes BuildConstants.RunnerPackage.Version, one line such as
"2.327.1" (actions/runner src/Runner.Listener/Runner.cs); Node 24 actions need 2.327.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.host import runner_version

PROGRAM = Path("/home/runner/actions-runner/bin/Runner.Listener")


def test_the_listener_is_in_bin() -> None:
    assert runner_version.listener(Path("/opt/runner")) == Path("/opt/runner/bin/Runner.Listener")


@pytest.mark.parametrize(
    ("output", "want"),
    [("2.327.1\n", (2, 327, 1)), ("2.330.0\r\n", (2, 330, 0)), ("  3.0.12 ", (3, 0, 12))],
)
def test_parse(output: str, want: tuple[int, int, int]) -> None:
    assert runner_version.parse(output) == want


@pytest.mark.parametrize("output", ["", "2.327", "v2.327.1", "2.327.1\n2.328.0", "Usage: ..."])
def test_parse_refuses_what_is_not_one_version(output: str) -> None:
    assert runner_version.parse(output) is None


@pytest.mark.parametrize("output", ["2.327.1", "2.328.0", "2.330.12", "3.0.0"])
def test_new_enough(output: str) -> None:
    assert runner_version.problem(output + "\n", 0, PROGRAM) is None


@pytest.mark.parametrize("output", ["2.327.0", "2.326.9", "2.99.0", "1.999.999"])
def test_too_old(output: str) -> None:
    # Compared as numbers: "2.99.0" is older than "2.327.1", though later as text.
    why = runner_version.problem(output + "\n", 0, PROGRAM)
    assert why is not None
    assert f"the Actions runner in /home/runner/actions-runner is {output}" in why
    assert '"Set up job"' in why and "2.327.1" in why


def test_not_a_runner() -> None:
    why = runner_version.problem("bash: not found\n", 127, PROGRAM)
    assert why is not None
    assert "printed 'bash: not found' (exit 127), not a runner version" in why
    assert runner_version.problem("2.330.0\n", 1, PROGRAM) is not None  # a failed run
