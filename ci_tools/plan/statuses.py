"""Green fingerprints as GitHub commit statuses: rebuild until green.

After a stack's build and tests pass, the build job records its input fingerprint on the
built commit (`ci-tools mark-green`): a commit status, state `success`, context
`ci-tools/<stack>`, description `inputs <fingerprint>`. The plan job (`ci-tools matrix
--until-green`) reads the statuses of the branch's recent commits and schedules exactly the
stacks whose current fingerprint has no such record. So a failed, cancelled or skipped
build is scheduled on every push until it is green; a docs-only push, or a revert to a state
already green, schedules nothing; the statuses show per stack on each commit in GitHub's UI.

API: GitHub's REST "Commit statuses" (`POST /repos/{owner}/{repo}/statuses/{sha}` needs
`statuses: write`; `GET /repos/{owner}/{repo}/commits/{ref}/statuses` lists newest first,
up to 100 a page), through PyGithub (`Commit.create_status`, `Commit.get_statuses`),
honouring GITHUB_API_URL, each request retried by `ci_tools.base.retry` (`github_api.Api.call`).
The lookback is bounded: the `DEFAULT_COMMITS` newest commits HEAD reaches (read from the
local clone, no request; through every parent, so on a pull request's merge commit the pull
request's own commits, where `mark-green --commit <head sha>` records, are read) and `DEFAULT_MAX_CALLS` requests; it stops as soon as every stack is
answered. A stack not found green within the bounds is scheduled: a spare build, never a
missed one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ci_tools.base.github_answers import read_page, text_or_none

if TYPE_CHECKING:
    from ci_tools.base.github_api import Api

CONTEXT_PREFIX = "ci-tools/"
DEFAULT_COMMITS = 50
DEFAULT_MAX_CALLS = 100
_DESCRIPTION = re.compile(r"inputs ([0-9a-f]{32})")
_STACK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,120}")
_FINGERPRINT = re.compile(r"[0-9a-f]{32}")


def context(stack: str) -> str:
    return CONTEXT_PREFIX + stack


def description(fingerprint: str) -> str:
    return f"inputs {fingerprint}"


def check_stack(stack: str) -> str | None:
    """Why `stack` cannot name a status context; None when it can."""
    if not _STACK.fullmatch(stack):
        return f'"{stack}" is not a stack name (letters, digits, ".", "_", "+", "-")'
    return None


def check_fingerprint(fingerprint: str) -> str | None:
    if not _FINGERPRINT.fullmatch(fingerprint):
        return (
            f'"{fingerprint}" is not a fingerprint (32 lower-case hex digits, as the matrix prints)'
        )
    return None


@dataclass(frozen=True, kw_only=True)
class Lookup:
    green: frozenset[str]  # stacks whose wanted fingerprint is green on a commit read
    commits_read: int
    calls: int
    complete: bool  # every stack answered, or every commit of the lookback read


def find_green(
    api: Api,
    commits: Sequence[str],
    wanted: Mapping[str, str],
    *,
    max_calls: int = DEFAULT_MAX_CALLS,
) -> Lookup:
    """Which of `wanted` (stack -> current fingerprint) a success status on one of `commits`
    (newest first) records."""
    pending = dict(wanted)
    calls = 0
    read = 0
    for sha in commits:
        if not pending or calls >= max_calls:
            break
        commit = api.repository.get_commit(sha)  # lazy: no request
        page = 0
        while True:
            if calls >= max_calls:
                break
            listing = commit.get_statuses()
            statuses = api.call(
                f"list the statuses of {sha[:12]}",
                lambda listing=listing, page=page: read_page(listing, page, _green_record),  # type: ignore[misc]
            )
            calls += 1
            for stack, fingerprint in statuses.items:
                if pending.get(stack) == fingerprint:
                    del pending[stack]
            if not statuses.full:
                read += 1
                break
            page += 1
    return Lookup(
        green=frozenset(wanted) - frozenset(pending),
        commits_read=read,
        calls=calls,
        complete=not pending or read == len(commits),
    )


def _green_record(status: Any) -> tuple[str, str] | None:
    """(stack, fingerprint) of a success status of ours; None for any other status, or one
    whose fields are not strings (`context: null` is no green record)."""
    state, context = text_or_none(status, "state"), text_or_none(status, "context")
    if state != "success" or context is None or not context.startswith(CONTEXT_PREFIX):
        return None
    match = _DESCRIPTION.fullmatch(text_or_none(status, "description") or "")
    return None if match is None else (context.removeprefix(CONTEXT_PREFIX), match[1])


def mark_green(
    api: Api, *, commit: str, stack: str, fingerprint: str, target_url: str | None
) -> None:
    """Record `fingerprint` of `stack` as green on `commit` (one request)."""
    from github import GithubException
    from requests import RequestException

    from ci_tools.base.errors import InputError
    from ci_tools.base.github_api import translate

    target = api.repository.get_commit(commit)
    kwargs = {"target_url": target_url} if target_url else {}
    what = f"set status {context(stack)} on {commit[:12]}"
    try:
        api.attempt(
            what,
            lambda: target.create_status(
                "success", description=description(fingerprint), context=context(stack), **kwargs
            ),
        )
    except (GithubException, RequestException) as exc:
        if isinstance(exc, GithubException) and exc.status == 403:
            # The generic message names `contents: write`; statuses need their own permission.
            raise InputError(
                f"GitHub refused to {what} (HTTP 403): the job needs `permissions: statuses: "
                "write` (a pull request from a fork never gets it: skip this step there)"
            ) from None
        raise translate(what, exc, api.settings) from None
