"""What both forms of `ci-tools mark-green` (one stack, or a shard's entries) decide alike:
which commit a green goes on, whether a stack's records prove it, the run's link."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base import digits, ghevent
from ci_tools.base.errors import InputError, printable

if TYPE_CHECKING:
    from ci_tools.build.results import ResultRecord
    from ci_tools.build.smoke.expect import Expectations

_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def unproven(
    folder: Path,
    packages: Sequence[str],
    scope: str,
    head: str,
    expected: Mapping[str, Expectations],
) -> list[str]:
    """Each of the stack's packages that `folder`'s records do not prove as the publish
    policy asks, with why, the fleet being able to do `scope` for the stack (its route from
    runners.yaml now, not one a record names); [] when every one is proven.

    Every record of a package counts, wherever in `folder` it lies: one that failed refuses
    the package though a passing copy lies beside it. A record proves only the commit it
    names, which must be `head`, the checked-out commit whose fingerprints are recomputed.
    `expected`: the catalog's expectations of each package, which its records' checks must
    match (`policy.not_as_tested`)."""
    from ci_tools.build import results

    found: dict[str, list[ResultRecord]] = {}
    for record in results.load_dir(folder):
        found.setdefault(record.variant, []).append(record)
    missing = []
    for name in packages:
        why = _why_unproven(found.get(name, []), scope, head, expected.get(name))
        if why is not None:
            missing.append(f"{name} ({why})")
    return missing


def _why_unproven(
    records: Sequence[ResultRecord], scope: str, head: str, expect: Expectations | None
) -> str | None:
    from ci_tools.build import policy

    if not records:
        return policy.judge(None, scope, expect).why
    of = f", one of its {len(records)} records" if len(records) > 1 else ""
    for record in records:
        verdict = policy.judge(record, scope, expect)
        if not verdict.allowed:
            return verdict.why + of
        if not record.commit:
            return f"a record that names no commit{of}: only a record of {head[:12]} proves it"
        if record.commit != head:
            return (
                f"a record of commit {printable(record.commit[:12])}{of}, not of the checked-out "
                f"{head[:12]}: build and test it at this commit"
            )
    return None


def expectations(
    args: argparse.Namespace, branch: str, names: Iterable[str]
) -> dict[str, Expectations]:
    """The catalog's expectations of each of `names` on `branch` (the catalog, or the one the
    recipes' names make); a name it lacks is left out, and no record proves it."""
    from ci_tools.build.smoke.expect import expectations_for
    from ci_tools.catalog.variants import expand
    from ci_tools.commands import _common

    catalog = _common.load(argparse.Namespace(**{**vars(args), "branch": branch}))
    if branch not in catalog.branches:
        return {}
    known = {v.name: v for v in expand(catalog, branch)}
    return {name: expectations_for(known[name]) for name in names if name in known}


def checked_out(cwd: Path) -> str:
    """The checked-out commit, which the records must name; exit 2 outside a git checkout."""
    from ci_tools.base import proc

    found = proc.run(["git", "rev-parse", "--verify", "HEAD"], cwd=cwd, timeout=60)
    head = found.stdout.strip() if found.ok else ""
    if not _COMMIT.fullmatch(head):
        raise InputError(
            f"{cwd}: no git commit checked out: mark-green runs in a checkout of the built "
            "commit, whose records name it"
        )
    return head


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
