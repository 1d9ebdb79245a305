"""What `ci-tools release` checks before it writes: could a release publish at all
(`--preflight`, run by the plan job before any build), and was anything published; and how
it ends (the counts, the notes it shows)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ci_tools.base.retry import RetryPolicy
from ci_tools.commands import _common

if TYPE_CHECKING:
    from github.GitRelease import GitRelease

    from ci_tools.base import github_api
    from ci_tools.ship.notes import Body
    from ci_tools.ship.release import Notes


def preflight(args: argparse.Namespace, settings: github_api.Settings, policy: RetryPolicy) -> int:
    """Could a release publish? Exit 2 naming what is missing (a dry run only says it)."""
    from ci_tools.base import ghoutput, github_api
    from ci_tools.base.errors import InputError
    from ci_tools.ship import preflight

    env = os.environ
    root = _common.catalog_path(args).parent
    api = github_api.connect_lazy(settings, policy, lambda line: ghoutput.notice(line, env))
    found = preflight.findings(
        dry_run=args.dry_run,
        lock=preflight.lock_problem(root),
        env=env,
        name=args.environment,
        found=preflight.environment(api, args.environment),
    )
    for note in found.notes:
        ghoutput.notice(f"release preflight: {note}", env)
    if found.problems:
        raise InputError(
            "this release could not publish, so nothing is built:\n  " + "\n  ".join(found.problems)
        )
    print(
        f"ci-tools: release preflight of {args.branch}: ready"
        + (" (dry run)" if args.dry_run else "")
    )
    return 0


def nothing_published(
    notes: Notes,
    branch: str,
    existing: GitRelease | None,
    *,
    dry_run: bool,
    say: Callable[[str], None],
) -> int:
    """No release: FailedError (exit 1) saying why nothing was (or would be) published."""
    from ci_tools.base.errors import FailedError

    counts = ", ".join(f"{n} {o}" for o, n in sorted(notes.counts.items()))
    say(f"variants of {branch}: {counts}")
    kept = f"; release {notes.tag} stays as it is" if existing is not None else ""
    verb = "would be" if dry_run else "was"
    failed = (
        "; failed: " + ", ".join(f"{r.variant} ({r.outcome})" for r in notes.failed)
        if notes.failed
        else ""
    )
    raise FailedError(f"no release: nothing {verb} published ({counts}){failed}{kept}")


def conclude(notes: Notes, branch: str, say: Callable[[str], None]) -> int:
    """The count of each outcome; FailedError (exit 1) naming every variant that failed."""
    from ci_tools.base.errors import FailedError

    counts = ", ".join(f"{n} {o}" for o, n in sorted(notes.counts.items()))
    say(f"variants of {branch}: {counts}")
    if notes.failed:
        raise FailedError(
            "failed: " + ", ".join(f"{r.variant} ({r.outcome})" for r in notes.failed)
        )
    return 0


def say_body(body: Body, say: Callable[[str], None]) -> None:
    say("release notes:")
    sys.stdout.write(body.text)
