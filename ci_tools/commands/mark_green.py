"""`ci-tools mark-green`: record a stack's input fingerprint as green on the built commit.

The test job runs it after the stack's tests pass, with the entry's `name` and `fingerprint`
from the matrix and the stack's records (`--results`): a stack is marked only when every
record proves its variant as the publish policy asks (a check that ran, or where the fleet
cannot run it, static proofs; never a stack whose checks proved nothing). It needs
GITHUB_TOKEN (or GH_TOKEN) with `statuses: write` and GITHUB_REPOSITORY; it honours
GITHUB_API_URL. The commit is `--commit`, else GITHUB_SHA.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from pathlib import Path

from ci_tools.base import ghoutput, github_api
from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.retry import RetryPolicy
from ci_tools.plan import statuses

POLICY = RetryPolicy()
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", required=True, metavar="NAME", help="the matrix entry's name")
    parser.add_argument(
        "--fingerprint", required=True, metavar="HEX", help="the matrix entry's fingerprint"
    )
    parser.add_argument(
        "--commit", metavar="SHA", help="the commit that was built (default: $GITHUB_SHA)"
    )
    parser.add_argument(
        "--results",
        type=Path,
        required=True,
        metavar="DIR",
        help="the stack's result records: each must prove its variant (publish policy)",
    )


def run(args: argparse.Namespace) -> int:
    env = os.environ
    for problem in (
        statuses.check_stack(args.stack),
        statuses.check_fingerprint(args.fingerprint),
    ):
        if problem is not None:
            raise InputError(problem)
    commit = (args.commit or env.get("GITHUB_SHA", "")).strip()
    if not _COMMIT.fullmatch(commit):
        raise InputError(
            f'--commit "{commit}" is not a full commit id (40 hex digits): pass the built '
            "commit, or run where GITHUB_SHA is set"
            if commit
            else "no commit: pass --commit SHA, or run where GITHUB_SHA is set"
        )
    _require_proof(args.results)
    settings = github_api.settings_from_env(env)
    api = github_api.connect_lazy(settings, POLICY, lambda line: ghoutput.notice(line, env))
    target_url = _run_url(env)
    statuses.mark_green(
        api, commit=commit, stack=args.stack, fingerprint=args.fingerprint, target_url=target_url
    )
    print(
        f"ci-tools: {statuses.context(args.stack)} is green at {commit[:12]}: "
        f"{statuses.description(args.fingerprint)}"
    )
    return 0


def _require_proof(folder: Path) -> None:
    """FailedError (exit 1) unless every record in `folder` proves its variant, each by the
    route its test leg recorded."""
    from ci_tools.build import policy, results

    unproven = []
    for record in results.load_dir(folder):
        route = record.test.route if record.test is not None else None
        verdict = policy.judge(record, route.scope if route is not None else "static")
        if not verdict.allowed:
            unproven.append(f"{record.variant} ({verdict.why})")
    if unproven:
        raise FailedError("not marked green: " + "; ".join(unproven))


def _run_url(env: Mapping[str, str]) -> str | None:
    """The workflow run that proved it green, for the status's link."""
    server = env.get("GITHUB_SERVER_URL", "").rstrip("/")
    repository = env.get("GITHUB_REPOSITORY", "")
    run_id = env.get("GITHUB_RUN_ID", "")
    if server.startswith("https://") and repository and run_id.isdigit():
        return f"{server}/{repository}/actions/runs/{run_id}"
    return None
