"""What both forms of `ci-tools mark-green` (one stack, or a shard's entries) decide alike:
which commit a green goes on, whether a stack's records prove it, the run's link."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ci_tools.base import digits, ghevent
from ci_tools.base.errors import InputError

_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def unproven(folder: Path, packages: Sequence[str], scope: str) -> list[str]:
    """Each of the stack's packages that `folder`'s records do not prove as the publish
    policy asks, with why, the fleet being able to do `scope` for the stack (its route from
    runners.yaml now, not one a record names); [] when every one is proven."""
    from ci_tools.build import policy, results

    found = {record.variant: record for record in results.load_dir(folder)}
    missing = []
    for name in packages:
        verdict = policy.judge(found.get(name), scope)
        if not verdict.allowed:
            missing.append(f"{name} ({verdict.why})")
    return missing


def commit(given: str | None, env: Mapping[str, str]) -> str:
    """`given`, else a pull request's head commit (from the event: GitHub's merge commit,
    which the run checks out, is reached by no later run), else GITHUB_SHA."""
    found = (given or ghevent.pull_request_head(env) or env.get("GITHUB_SHA", "")).strip()
    if not _COMMIT.fullmatch(found):
        raise InputError(
            f'--commit "{found}" is not a full commit id (40 hex digits): pass the commit to '
            "record it on, or run where GITHUB_SHA is set"
            if found
            else "no commit: pass --commit SHA, or run where GITHUB_SHA is set"
        )
    return found


def run_url(env: Mapping[str, str]) -> str | None:
    """The workflow run that proved it green, for the status's link."""
    server = env.get("GITHUB_SERVER_URL", "").rstrip("/")
    repository = env.get("GITHUB_REPOSITORY", "")
    run_id = env.get("GITHUB_RUN_ID", "")
    if (
        server.startswith("https://")
        and repository
        and digits.whole(run_id, max_digits=20) is not None
    ):
        return f"{server}/{repository}/actions/runs/{run_id}"
    return None
