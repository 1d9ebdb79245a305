"""Green fingerprints as GitHub commit statuses: rebuild until green.

When a stack's records prove it, build-stack's mark-green job records its input fingerprint
(`ci-tools mark-green`): a commit status, state `success`, context `ci-tools/<stack>`,
description `inputs <fingerprint>` (the fingerprint names its kind: `kinds`). On a push it is
recorded on the pushed commit; on a pull request on the pull request's head commit (the
event's `pull_request.head.sha`), never on GitHub's temporary merge commit, which no later
run reaches. The plan job (`ci-tools matrix --until-green`) schedules exactly the stacks whose
current fingerprint no trusted status records. So a failed, cancelled or skipped build is
scheduled on every push until it is green; a docs-only push, or a revert to a state already
green, schedules nothing; the statuses show per stack on each commit in GitHub's UI.

A run's greens are also recorded in aggregate, one check run for up to 1,985 stacks
(`greens_aggregate`, within GitHub's API limits at any size): each commit's is read first,
one request, and its statuses only for the stacks still unanswered.

Which commits are read, newest first, until every stack is answered:
* the commits HEAD reaches (read from the local clone, no request), through every parent: a
  pull request's merge commit, or a merge commit that merged one, reaches its commits;
* for each of them with one parent (a squash or rebase merge makes commits whose parents do
  not include the pull request's), the pull requests GitHub associates with it ("List pull
  requests associated with a commit": the merged pull request that introduced it), and
  their head commit and commits ("List commits on a pull request", at most 250).
A fingerprint is the hash of the inputs, so the commit that holds it is only where to look:
a status counts wherever it sits, when it names the stack's current fingerprint.

Which statuses count: state `success`, context `ci-tools/<stack>`, the stack's current
fingerprint, of the plan's kind, created by a trusted identity (`DEFAULT_TRUSTED`, the
identity GITHUB_TOKEN writes as, or those the workflow names). Anyone else's, however well
formed, is ignored and the plan says so: a status is easy to forge for anyone who may write
statuses, and a forged green would skip a build.

API: GitHub's REST "Commit statuses" (`POST /repos/{o}/{r}/statuses/{sha}` needs `statuses:
write`; `GET .../commits/{ref}/statuses` lists newest first, up to 100 a page), "Commits"
(`GET .../commits/{sha}/pulls`) and "Pulls" (`GET .../pulls/{n}/commits`), through PyGithub,
honouring GITHUB_API_URL, each request retried by `ci_tools.base.retry` (`github_api.Api`).
Bounded: at most `max_calls` requests in all; a stack not found green within the bounds is
scheduled: a spare build, never a missed one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ci_tools.base.github_answers import PER_PAGE, read_page, text_or_none
from ci_tools.plan import greens_aggregate, kinds
from ci_tools.plan.kinds import FingerprintKind
from ci_tools.plan.status_defaults import DEFAULT_COMMITS as DEFAULT_COMMITS
from ci_tools.plan.status_defaults import DEFAULT_MAX_CALLS as DEFAULT_MAX_CALLS
from ci_tools.plan.status_defaults import DEFAULT_TRUSTED as DEFAULT_TRUSTED
from ci_tools.plan.status_defaults import check_login as check_login

if TYPE_CHECKING:
    from ci_tools.base.github_api import Api

CONTEXT_PREFIX = "ci-tools/"
# GitHub lists at most 250 commits of a pull request ("List commits on a pull request").
PULL_COMMITS_LIMIT = 250
_DESCRIPTION = re.compile(r"inputs (\S{1,80})")
_STACK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,120}")


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
    return kinds.check(fingerprint)


@dataclass(frozen=True, kw_only=True)
class Lookup:
    green: frozenset[str]  # stacks whose wanted fingerprint is green on a commit read
    commits_read: int  # of the local lookback
    pull_commits_read: int  # commits of associated pull requests
    calls: int
    complete: bool  # every stack answered, or every commit of the lookback read
    # Statuses that name a wanted stack's context and were not counted, and why.
    untrusted: Mapping[str, int] = field(default_factory=dict)  # creator -> statuses
    other_kind: Mapping[str, int] = field(default_factory=dict)  # kind ("none") -> statuses
    pulls_refused: str | None = None  # why pull requests were not read, when they were not
    # Stacks recorded as not provable on this fleet at their inputs and this inventory.
    unprovable: frozenset[str] = frozenset()


class _Budget(Exception):
    """The request budget is spent."""


class _Refused(Exception):
    """GitHub refused an optional request."""


class _Reader:
    """Reads statuses for `find_green`, counting requests and what it ignored."""

    def __init__(
        self,
        api: Api,
        wanted: Mapping[str, str],
        *,
        kind: FingerprintKind,
        trusted: frozenset[str],
        max_calls: int,
        inventory: str | None = None,
    ) -> None:
        self.api = api
        self.pending = dict(wanted)
        self.kind = kind
        self.trusted = trusted
        self.max_calls = max_calls
        self.calls = 0
        self.exhausted = False
        self.pulls_refused: str | None = None  # why GitHub would not list pull requests
        self.checks_refused = False  # GitHub would not list check runs
        self.inventory = inventory  # runners.yaml's digest: unprovable records of it count
        self.unprovable: set[str] = set()
        self.seen: set[str] = set()
        self.untrusted: Counter[str] = Counter()
        self.other_kind: Counter[str] = Counter()

    def request(self, what: str, action: Any, *, optional: bool = False) -> Any:
        """One request within the budget. `optional`: GitHub's refusal raises `_Refused`
        (naming the answer) for the caller to do without, instead of failing the lookup."""
        if self.calls >= self.max_calls:
            self.exhausted = True
            raise _Budget
        self.calls += 1
        if not optional:
            return self.api.call(what, action)
        from github import GithubException
        from requests import RequestException

        try:
            return self.api.attempt(what, action)
        except (GithubException, RequestException) as exc:
            answer = f"HTTP {exc.status}" if isinstance(exc, GithubException) else "no answer"
            raise _Refused(f"GitHub refused to {what}: {answer}") from None

    def read_commit(self, sha: str) -> None:
        """`sha`'s aggregate greens (one request), then every page of its statuses while a
        stack is still unanswered, unless read before."""
        if sha in self.seen:
            return
        self.read_aggregate(sha)
        listing = self.api.repository.get_commit(sha).get_statuses()  # lazy: no request
        page = 0
        while self.pending:
            statuses = self.request(
                f"list the statuses of {sha[:12]}",
                lambda page=page: read_page(listing, page, _green_record),
            )
            for record in statuses.items:
                self.count(record)
            if not statuses.full:
                break
            page += 1
        self.seen.add(sha)

    def read_aggregate(self, sha: str) -> None:
        """The check runs in which a run recorded its greens (`greens_aggregate`): one
        request, the first page. Where GitHub refuses to list check runs (the job lacks
        `checks: read`) none are read again; the statuses still count."""
        if self.checks_refused or not self.pending:
            return
        # filter=all: by default GitHub lists only the latest check run of a name, which
        # would hide an earlier run's greens on the same commit ("List check runs for a Git
        # reference", `filter`).
        listing = self.api.repository.get_commit(sha).get_check_runs(
            check_name=greens_aggregate.CHECK_NAME, filter="all"
        )
        try:
            page = self.request(
                f"list the check runs of {sha[:12]}",
                lambda: read_page(listing, 0, greens_aggregate.read_record),
                optional=True,
            )
        except _Refused:
            self.checks_refused = True
            return
        found, unprovable, untrusted = greens_aggregate.green_of(
            page.items, self.pending, self.inventory
        )
        if untrusted:
            self.untrusted["(check runs of another app)"] += untrusted
        self.unprovable |= unprovable
        for stack in found | unprovable:
            del self.pending[stack]

    def count(self, record: _GreenRecord) -> None:
        if record.stack not in self.pending:
            return
        if record.creator not in self.trusted:
            self.untrusted[record.creator] += 1
            return
        kind = kinds.kind_of(record.fingerprint)
        if kind is not self.kind:
            self.other_kind[kind.value if kind else "none"] += 1
            return
        if record.fingerprint == self.pending[record.stack]:
            del self.pending[record.stack]

    def pull_commits(self, sha: str) -> Iterator[str]:
        """The head commit, then the other commits, newest first, of each pull request
        GitHub associates with `sha`. Where GitHub refuses to list pull requests (the job
        lacks `pull-requests: read`) none are read again, and the plan says so: the commits'
        own statuses still count."""
        if self.pulls_refused is not None:
            return
        try:
            pulls = self.request(
                f"list the pull requests of {sha[:12]}",
                lambda: read_page(self.api.repository.get_commit(sha).get_pulls(), 0, _pull),
                optional=True,
            ).items
        except _Refused as exc:
            self.pulls_refused = str(exc)
            return
        for pull, head in pulls:
            yield head
            try:
                shas = self.commits_of(pull)
            except _Refused as exc:
                self.pulls_refused = str(exc)
                return
            yield from (s for s in reversed(shas) if s != head)

    def commits_of(self, pull: Any) -> list[str]:
        """A pull request's commits, oldest first (GitHub lists at most 250)."""
        listing = pull.get_commits()
        shas: list[str] = []
        for page in range(PULL_COMMITS_LIMIT // PER_PAGE + 1):
            if not self.pending:
                break
            commits = self.request(
                f"list the commits of pull request #{pull.number}",
                lambda page=page, listing=listing: read_page(
                    listing, page, lambda commit: text_or_none(commit, "sha")
                ),
                optional=True,
            )
            shas += commits.items
            if not commits.full:
                break
        return shas


@dataclass(frozen=True)
class _GreenRecord:
    stack: str
    fingerprint: str  # "" when the description names none
    creator: str


def _pull(pull: Any) -> tuple[Any, str] | None:
    """A pull request with its head commit's sha; None when the head names no sha."""
    head = text_or_none(getattr(pull, "head", None), "sha")
    return None if head is None else (pull, head)


def _green_record(status: Any) -> _GreenRecord | None:
    """A success status of ours; None for any other status, or one whose fields are not
    strings (`context: null` is no green record)."""
    state, context = text_or_none(status, "state"), text_or_none(status, "context")
    if state != "success" or context is None or not context.startswith(CONTEXT_PREFIX):
        return None
    match = _DESCRIPTION.fullmatch(text_or_none(status, "description") or "")
    creator = text_or_none(getattr(status, "creator", None), "login") or "(unknown)"
    return _GreenRecord(context.removeprefix(CONTEXT_PREFIX), match[1] if match else "", creator)


def find_green(
    api: Api,
    commits: Sequence[tuple[str, int]],
    wanted: Mapping[str, str],
    *,
    kind: FingerprintKind,
    trusted: Sequence[str] = DEFAULT_TRUSTED,
    max_calls: int = DEFAULT_MAX_CALLS,
    inventory: str | None = None,
) -> Lookup:
    """Which of `wanted` (stack -> current fingerprint, of `kind`) a trusted success status
    records, reading `commits` ((sha, number of parents), newest first) and the pull
    requests associated with each one that is not a merge."""
    reader = _Reader(
        api, wanted, kind=kind, trusted=frozenset(trusted), max_calls=max_calls, inventory=inventory
    )
    read = 0
    pulled = 0
    try:
        for sha, parents in commits:
            if not reader.pending:
                break
            reader.read_commit(sha)
            read += 1
            if parents == 1 and reader.pending:
                for pull_sha in reader.pull_commits(sha):
                    if not reader.pending:
                        break
                    if pull_sha not in reader.seen:
                        reader.read_commit(pull_sha)
                        pulled += 1
    except _Budget:
        pass
    return Lookup(
        green=frozenset(wanted) - frozenset(reader.pending) - reader.unprovable,
        unprovable=frozenset(reader.unprovable),
        commits_read=read,
        pull_commits_read=pulled,
        calls=reader.calls,
        complete=not reader.pending or (read == len(commits) and not reader.exhausted),
        untrusted=dict(reader.untrusted),
        other_kind=dict(reader.other_kind),
        pulls_refused=reader.pulls_refused,
    )


def mark_green(
    api: Api, *, commit: str, stack: str, fingerprint: str, target_url: str | None
) -> str | None:
    """Record `fingerprint` of `stack` as green on `commit` (one request, and its bounded
    retries). None when recorded; else why GitHub did not take it (a refusal, a failure, no
    answer within the Api's deadline, an answer not of GitHub's shape), for a notice: a green
    that is not recorded costs a later rebuild, never a failed leg."""
    from github import GithubException
    from requests import RequestException

    from ci_tools.base.errors import FailedError
    from ci_tools.base.github_failures import translate
    from ci_tools.base.github_transient import is_transient

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
    except FailedError as exc:
        return f"{exc}; not recorded, so the next plan builds it again"
    except (GithubException, RequestException) as exc:
        if isinstance(exc, GithubException) and exc.status == 403 and not is_transient(exc):
            # The generic message names `contents: write`; statuses need their own permission.
            return (
                f"GitHub refused to {what} (HTTP 403): the token is read-only here (a fork's or "
                "Dependabot's pull request) or the job lacks `permissions: statuses: write`; "
                "not recorded, so the next plan builds the stack again"
            )
        return (
            f"{translate(what, exc, api.settings)}; not recorded, so the next plan builds it again"
        )
    return None
