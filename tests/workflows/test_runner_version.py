"""build-stack.yml's first step: the Actions runner is 2.327.1 or later (issue 19 item 8).

The pinned actions run on Node 24, which the runner supports from 2.327.1; on an older one
the first action fails without saying why. The step runs before any action, so it is shell
only: it finds the runner's Runner.Worker as the parent of its shell, and asks the
Runner.Listener beside it for the version. Here the step's own script runs under a stand-in
Runner.Worker (a copy of coreutils' `timeout`, which forks its command and waits, so the
shell's parent is a process of that path) beside a stand-in Runner.Listener.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.workflows.test_workflows import load

STEP = "Actions runner 2.327.1 or later"


def _step() -> dict[str, str]:
    build = load(REPO_ROOT / ".github" / "workflows" / "build-stack.yml")["jobs"]["build"]
    return next(s for s in build["steps"] if s.get("name") == STEP)


def test_it_is_the_first_step_and_uses_no_action() -> None:
    build = load(REPO_ROOT / ".github" / "workflows" / "build-stack.yml")["jobs"]["build"]
    assert build["steps"][0].get("name") == STEP
    assert "uses" not in build["steps"][0]


def _run(tmp_path: Path, version: str | None) -> subprocess.CompletedProcess[str]:
    runner = tmp_path / "actions-runner" / "bin"
    runner.mkdir(parents=True)
    worker = runner / "Runner.Worker"
    timeout = shutil.which("timeout")
    assert timeout is not None
    shutil.copy(timeout, worker)
    if version is not None:
        listener = runner / "Runner.Listener"
        listener.write_text(f"#!/bin/sh\nprintf '%s\\r\\n' '{version}'\n", encoding="utf-8")
        listener.chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(_step()["run"], encoding="utf-8")
    return subprocess.run(
        [str(worker), "60", "bash", "-e", "-o", "pipefail", str(script)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("version", ["2.327.1", "2.328.0", "2.330.12", "3.0.0"])
def test_a_runner_new_enough_passes(tmp_path: Path, version: str) -> None:
    done = _run(tmp_path, version)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Actions runner {version}" in done.stdout


@pytest.mark.parametrize("version", ["2.327.0", "2.326.9", "2.99.0", "1.999.999"])
def test_an_older_runner_fails_naming_both_versions(tmp_path: Path, version: str) -> None:
    done = _run(tmp_path, version)
    assert done.returncode == 1
    assert f"::error::this runner is version {version}; " in done.stdout
    assert "need 2.327.1 or later" in done.stdout


def test_where_it_cannot_tell_it_says_so_and_goes_on(tmp_path: Path) -> None:
    """Under act, or a runner laid out otherwise: a notice, never a red job."""
    done = _run(tmp_path, None)
    assert done.returncode == 0
    assert "::notice::cannot tell this runner's version" in done.stdout
