"""Which planned stacks to build: all of them, those not green at their current inputs
(`--until-green`, commit statuses: `statuses`), or those whose inputs changed since a commit
(`--since REF`: `changes`), the fallback when the green records cannot be read; and each
stack's input fingerprint at HEAD (`fingerprint`), which the workflow's build legs record
when they pass.

Only `ci-tools matrix` with fingerprints (`--fingerprints`, `--since`, `--until-green`,
`--github-output`) imports this module: fingerprints cost a read of the tree through git and
a Nix parse of every recipe and what it imports.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ci_tools.base import ghoutput
from ci_tools.base.errors import InputError
from ci_tools.base.retry import RetryPolicy
from ci_tools.plan.changes import Base, ChangeSet, FactsAt, base_of, narrowed, since
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.fingerprint import Fingerprinter, Fingerprints
from ci_tools.plan.kinds import FingerprintKind
from ci_tools.plan.nixinputs import NIX_PARSER, NixReader

if TYPE_CHECKING:
    from ci_tools.plan import statuses

# The status reads' retries: the plan job waits for GitHub at most this long in all.
POLICY = RetryPolicy(attempts=4, total_seconds=120.0)


@dataclass(frozen=True, kw_only=True)
class Schedule:
    until_green: bool
    since: str | None  # REF
    lookback: int  # commits whose statuses --until-green reads
    max_api_calls: int
    kind: FingerprintKind | None = None  # None: Nix's parse where Nix is installed
    trusted: tuple[str, ...] = ()  # creators whose statuses count; empty: the default
    # runners.yaml's digest (greens_aggregate.inventory_digest): a stack recorded as not
    # provable on the fleet of this inventory, at its current inputs, is not built again.
    inventory: str | None = None


@dataclass(frozen=True, kw_only=True)
class Scheduled:
    fingerprints: Mapping[str, str]  # stack -> its input fingerprint at HEAD
    keep: frozenset[str] | None  # the stacks to build; None: all of them
    why_empty: str  # when `keep` is empty: why, for a notice
    kind: FingerprintKind


def schedule_stacks(
    schedule: Schedule,
    checkout: Checkout,
    stacks: Mapping[str, tuple[str, ...]],
    head_facts: Mapping[str, Hashable],
    facts_at: FactsAt,
    env: Mapping[str, str],
    reader: NixReader | None = None,
) -> Scheduled:
    """Fingerprint `stacks` (entry name -> member variants) at HEAD, warn about what the
    fingerprints found wrong (references to nothing, files Nix cannot parse), and schedule;
    `reader`: one of `schedule.kind` made already (with a parse started), else a new one."""
    fingerprinter = Fingerprinter(reader if reader is not None else reader_for(schedule.kind))
    facts_at = _asked_once(facts_at)  # `--since` alone may ask, then its fallback again
    base = _base(schedule, checkout, env)
    if isinstance(base, Base) and not schedule.until_green:
        alone = _since_alone(schedule, checkout, stacks, head_facts, facts_at, base, fingerprinter)
        if alone is not None:
            for problem in alone[1]:
                ghoutput.warning(problem, env)
            return alone[0]
    trees = [checkout.head] + ([base.tree] if isinstance(base, Base) else [])
    fingerprinter.prefetch(trees, stacks)  # HEAD's and REF's files: one start of Nix
    head = fingerprinter.stacks(checkout.head, stacks, head_facts)
    for problem in head.problems:
        ghoutput.warning(problem, env)
    keep, why_empty = _keep(schedule, checkout, stacks, head, fingerprinter, facts_at, base, env)
    return Scheduled(fingerprints=head.by_stack, keep=keep, why_empty=why_empty, kind=head.kind)


def _since_alone(
    schedule: Schedule,
    checkout: Checkout,
    stacks: Mapping[str, tuple[str, ...]],
    head_facts: Mapping[str, Hashable],
    facts_at: FactsAt,
    base: Base,
    fingerprinter: Fingerprinter,
) -> tuple[Scheduled, tuple[str, ...]] | None:
    """`--since` alone: only the stacks a push may have changed are fingerprinted
    (`changes.narrowed`); with what their fingerprints found wrong. None where REF's catalog
    is unknown: every stack is then scheduled, fingerprinted, with a notice (`since`)."""
    found = narrowed(
        checkout,
        base,
        stacks,
        head_facts=head_facts,
        facts_at=facts_at,
        fingerprinter=fingerprinter,
    )
    if found is None:
        return None
    change_set, head = found
    scheduled = Scheduled(
        fingerprints=head.by_stack,
        keep=change_set.stacks,
        why_empty=_nothing_changed(schedule.since),
        kind=head.kind,
    )
    return scheduled, head.problems


def _asked_once(facts_at: FactsAt) -> FactsAt:
    """`facts_at`, asked at most once a commit (a `git show` and a parse of the catalog)."""
    answers: dict[str, Mapping[str, Hashable] | str] = {}

    def ask(base: Base) -> Mapping[str, Hashable] | str:
        if base.commit not in answers:
            answers[base.commit] = facts_at(base)
        return answers[base.commit]

    return ask


def reader_for(kind: FingerprintKind | None) -> NixReader:
    """The Nix reader that computes fingerprints of `kind` (None: Nix's parse where
    `nix-instantiate` is installed, else raw bytes); Nix's parse without Nix is bad input."""
    if kind is FingerprintKind.RAW:
        return NixReader(use_nix=False)
    reader = NixReader()
    if kind is FingerprintKind.NIX and not reader.use_nix:
        raise InputError(
            f"--fingerprint-kind nix: {NIX_PARSER} is not on PATH. Install Nix (Debian/Ubuntu: "
            "nix-bin), or pass --fingerprint-kind raw; greens recorded with one kind are never "
            "found by the other"
        )
    return reader


def _base(
    schedule: Schedule, checkout: Checkout, env: Mapping[str, str]
) -> Base | ChangeSet | None:
    """The commit `--since REF` compares with, asked before HEAD is fingerprinted so that
    both trees are read together; None where the comparison is not the plan (no --since, or
    --until-green with a token to read the greens: --since is then only its fallback)."""
    if schedule.since is None or (schedule.until_green and _token(env)):
        return None
    return base_of(checkout, schedule.since)


def _token(env: Mapping[str, str]) -> bool:
    return any(env.get(v, "").strip() for v in ("GITHUB_TOKEN", "GH_TOKEN"))


def _keep(
    schedule: Schedule,
    checkout: Checkout,
    stacks: Mapping[str, tuple[str, ...]],
    head: Fingerprints,
    fingerprinter: Fingerprinter,
    facts_at: FactsAt,
    base: Base | ChangeSet | None,
    env: Mapping[str, str],
) -> tuple[frozenset[str] | None, str]:
    """The stacks to build (None: all) and, for an empty result, why."""
    if schedule.until_green:
        green = _green(schedule, checkout, head, env)
        if green is not None:
            return frozenset(stacks) - green, (
                "the matrix is empty: every selected stack's inputs are green on a recent commit"
            )
    if schedule.since is None:
        return None, ""
    change_set = since(
        checkout,
        schedule.since,
        stacks=stacks,
        head=head,
        fingerprinter=fingerprinter,
        facts_at=facts_at,
        base=base,
    )
    if change_set.notice:
        ghoutput.notice(change_set.notice, env)
    return change_set.stacks, _nothing_changed(schedule.since)


def _nothing_changed(ref: str | None) -> str:
    return f"the matrix is empty: no selected stack's inputs changed since {ref}"


def _green(
    schedule: Schedule, checkout: Checkout, head: Fingerprints, env: Mapping[str, str]
) -> frozenset[str] | None:
    """The stacks whose current fingerprint is green; None: unknown (then --since decides)."""
    fallback = f"--since {schedule.since}" if schedule.since is not None else "the full matrix"
    if not _token(env):
        ghoutput.notice(
            "--until-green: no GitHub token (GITHUB_TOKEN / GH_TOKEN: a local run, or a step "
            "that does not pass it; a fork's pull request gets a read-only one, which reads), so "
            f"green records cannot be read: scheduling by {fallback}",
            env,
        )
        return None
    if checkout.git is None:
        ghoutput.notice(
            f"--until-green: {checkout.root} is not a git checkout with commits: scheduling by "
            f"{fallback}",
            env,
        )
        return None
    # Imported only here: `ci-tools matrix` without --until-green never loads PyGithub.
    from ci_tools.base import github_api
    from ci_tools.base.errors import CiToolsError
    from ci_tools.plan import statuses

    try:
        settings = github_api.settings_from_env(env)
        api = github_api.connect_lazy(settings, POLICY, lambda line: ghoutput.notice(line, env))
        commits = checkout.git.recent_commits("HEAD", schedule.lookback)
        lookup = statuses.find_green(
            api,
            commits,
            head.by_stack,
            kind=head.kind,
            trusted=schedule.trusted or statuses.DEFAULT_TRUSTED,
            max_calls=schedule.max_api_calls,
            inventory=schedule.inventory,
        )
    except CiToolsError as exc:
        ghoutput.warning(
            f"--until-green: cannot read the green records ({exc}): scheduling by {fallback}",
            env,
        )
        return None
    _say_ignored(lookup, head.kind, schedule.trusted or statuses.DEFAULT_TRUSTED, env)
    _say_found(lookup, len(head.by_stack), schedule.max_api_calls, env)
    if lookup.unprovable:
        names = sorted(lookup.unprovable)
        shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        ghoutput.notice(
            f"--until-green: {len(names)} stacks not built again: an earlier run built them at "
            "these inputs and this fleet (runners.yaml) could prove none of their checks; a "
            f"change of their inputs or of runners.yaml builds them again: {shown}",
            env,
        )
    return lookup.green | lookup.unprovable


def _say_found(
    lookup: statuses.Lookup, stacks: int, max_calls: int, env: Mapping[str, str]
) -> None:
    bounds = (
        ""
        if lookup.complete
        else (
            f"; stopped at --max-api-calls {max_calls} before answering every stack: the rest "
            "are scheduled"
        )
    )
    pulled = (
        f", {lookup.pull_commits_read} of associated pull requests"
        if lookup.pull_commits_read
        else ""
    )
    ghoutput.notice(
        f"--until-green: {len(lookup.green)} of {stacks} stacks are green at their current "
        f"inputs ({lookup.commits_read} commits{pulled}, {lookup.calls} requests{bounds})",
        env,
    )


def _say_ignored(
    lookup: statuses.Lookup,
    kind: FingerprintKind,
    trusted: tuple[str, ...],
    env: Mapping[str, str],
) -> None:
    """A notice for each kind of status that named a stack and did not count."""
    if lookup.untrusted:
        who = ", ".join(f"{login} ({n})" for login, n in sorted(lookup.untrusted.items())[:10])
        ghoutput.notice(
            f"--until-green: ignored success statuses of ci-tools/ contexts not created by "
            f"{' or '.join(trusted)}: {who}; only the workflow's own identity records greens "
            "(name another with --trusted-creator)",
            env,
        )
    if lookup.pulls_refused is not None:
        ghoutput.notice(
            f"--until-green: pull requests not read ({lookup.pulls_refused}): the plan job "
            "needs `pull-requests: read`, else what a squash- or rebase-merged pull request "
            "proved is built again",
            env,
        )
    if lookup.other_kind:
        other = ", ".join(f"{n} of kind {k}" for k, n in sorted(lookup.other_kind.items()))
        ghoutput.notice(
            f"--until-green: ignored green statuses of another fingerprint kind ({other}): this "
            f"plan computes {kind.description} fingerprints ({kind.value}-...), and fingerprints "
            "of two kinds are never compared; those stacks are built again",
            env,
        )
