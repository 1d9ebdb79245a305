"""Is the GitHub Actions runner on this host new enough for the pinned actions? (issue 28, item 7)

The pinned actions (actions/checkout v7 and the others) run on Node 24 (`runs.using: node24`),
which the runner supports from 2.327.1 (actions/runner release v2.327.1, pull request 3940).
An older runner loads each action's manifest while it sets the job up and refuses the unknown
`using` ("'using: node24' is not supported", ActionManifestManager.ConvertRuns, as
actions/runner issue 3600 shows for node22): the job fails at "Set up job", before its first
step. So no step of a job, and no preflight run by one, can check it; and GitHub's API cannot
either: "List self-hosted runners for a repository" answers id, name, os, status, busy,
labels, runner_group_id and ephemeral per runner, no version (the REST API's `runner`
schema). It is checked on the host, where a maintainer sets the runner up: the runner prints
its version with `bin/Runner.Listener --version` (actions/runner src/Runner.Listener/
Runner.cs: `--version` writes BuildConstants.RunnerPackage.Version); its `.runner` file, the
registration config.sh writes, holds no version.

Pure: the caller runs the listener (`listener`) and hands over what it printed.
"""

from __future__ import annotations

import re
from pathlib import Path

LEAST = (2, 327, 1)
LEAST_TEXT = ".".join(str(part) for part in LEAST)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def listener(runner_dir: Path) -> Path:
    """The runner's listener program in the folder config.sh was run in (`bin/`: a self-
    update replaces it there)."""
    return runner_dir / "bin" / "Runner.Listener"


def parse(output: str) -> tuple[int, int, int] | None:
    """`Runner.Listener --version`'s output ("2.327.1", one line) -> (2, 327, 1); None when it
    is not one version."""
    lines = [line.strip() for line in output.strip().splitlines()]
    match = _VERSION.fullmatch(lines[0]) if len(lines) == 1 else None
    if match is None:
        return None
    major, minor, patch = (int(group) for group in match.groups())
    return major, minor, patch


def problem(output: str, returncode: int, program: Path) -> str | None:
    """What is wrong with the runner whose `program --version` printed `output` and exited
    `returncode`; None when it is LEAST or later."""
    shown = output.strip()[:80] or "nothing"
    version = parse(output) if returncode == 0 else None
    if version is None:
        return (
            f"{program} --version printed {shown!r} (exit {returncode}), not a runner version "
            f"such as {LEAST_TEXT}: point --runner-dir at the folder the Actions runner was "
            "configured in (where config.sh and .runner are)"
        )
    if version < LEAST:
        have = ".".join(str(part) for part in version)
        return (
            f"the Actions runner in {program.parent.parent} is {have}; the pinned actions run "
            f"on Node 24, which the runner supports from {LEAST_TEXT}: every job on it fails at "
            f'"Set up job", before any step. Update the runner (let it self-update: do not '
            "configure it with --disableupdate; or install the current release)"
        )
    return None
