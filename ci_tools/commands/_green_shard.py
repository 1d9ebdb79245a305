"""`ci-tools mark-green --shard FILE --results-root DIR`: mark every entry of one shard whose
records prove it, in one process over one GitHub connection.

build-stack.yml's `mark-green` job runs it on a GitHub-hosted runner after the shard's test
legs, with the shard's matrix (`{"include": [entries]}`, as `ci-tools matrix` writes it) in
FILE and every `results-*` artifact of the run downloaded into DIR, one folder each
(`DIR/results-<entry name>/`, what download-artifact does with `pattern` and no
`merge-multiple`). It has the plan job's Nix, so it recomputes each fingerprint as the plan
computed it.

Each entry is marked, as the one-stack form would mark it, when its fingerprint is its
current one at the checked-out commit and its records prove every package (the publish
policy). Every other entry gets a notice saying why, and costs only a later rebuild: the
exit status is 0 unless the input itself is bad (exit 2: FILE or DIR unreadable or not what
`ci-tools matrix` writes, a branch or a catalog the checkout does not have, no token).

Bounded: one status write per proven entry (at most `SHARD_SIZE`), each retried within
`POLICY` and all of them within its total time; a second apart (GitHub's "Best practices
for using the REST API": wait at least one second between mutative requests, and under its
secondary limit of 80 content-creating requests a minute); after the first write GitHub
refuses, the rest are not tried (every write of the shard goes to one commit with one token,
so each would be refused alike) and each gets a notice.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base import ghevent, ghoutput, matrix_file
from ci_tools.base.errors import InputError
from ci_tools.base.retry import RetryPolicy
from ci_tools.commands import _green, _planning
from ci_tools.plan import kinds, statuses
from ci_tools.plan.matrix import SHARD_SIZE

if TYPE_CHECKING:
    from ci_tools.base.github_api import Settings
    from ci_tools.build.smoke.expect import Expectations
    from ci_tools.plan.matrix import Entry

POLICY = RetryPolicy(attempts=3, total_seconds=900.0, initial_seconds=2.0, max_seconds=20.0)
WRITE_INTERVAL_SECONDS = 1.0
ARTIFACT_PREFIX = "results-"
UNPROVEN = "not proven: "


@dataclass(frozen=True, kw_only=True)
class ShardEntry:
    name: str
    branch: str
    packages: tuple[str, ...]
    fingerprint: str | None  # None: planned without one (nothing to mark)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    entry: ShardEntry
    why_not: str | None  # None: current and proven, to be marked


def read_shard(path: Path) -> list[ShardEntry]:
    """The shard's entries; InputError (exit 2) naming FILE and the entry otherwise."""
    source = f"--shard {path}"
    entries = matrix_file.parse(matrix_file.read_text(path, "--shard"), source)
    if len(entries) > SHARD_SIZE:
        raise InputError(
            f"{source}: {len(entries)} entries; a shard is one matrix, at most {SHARD_SIZE} "
            "(GitHub's limit per matrix)"
        )
    shard: list[ShardEntry] = []
    for entry in entries:
        name = entry.name if isinstance(entry.name, str) else ""
        problem = statuses.check_stack(name)
        if problem is not None:
            raise InputError(f"{entry.where}.name: {problem}")
        fingerprint = entry.fingerprint or None
        if fingerprint is not None:
            problem = statuses.check_fingerprint(str(fingerprint))
            if not isinstance(fingerprint, str) or problem is not None:
                raise InputError(f"{entry.where}.fingerprint: {problem or 'must be a string'}")
        if any(s.name == name for s in shard):
            raise InputError(f"{entry.where}.name: {name} is in the shard twice")
        shard.append(
            ShardEntry(
                name=name, branch=entry.branch, packages=entry.packages, fingerprint=fingerprint
            )
        )
    return shard


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    entries = read_shard(args.shard)
    root: Path = args.results_root
    if not root.is_dir():
        raise InputError(f"--results-root {root}: no such folder (create it, even empty)")
    if args.record is not None:
        return _record(args, env, entries, root)
    commit = _green.commit(args.commit, env)
    read_only = ghevent.read_only_reason(env)
    if read_only is not None:
        for entry in entries:
            _notice(entry, f"{read_only}; the next trusted run builds it again", env)
        return 0
    from ci_tools.base import github_api

    settings = github_api.settings_from_env(env)  # before the work: a missing token is exit 2
    verdicts = judge(args, env, entries, root)
    for verdict in verdicts:
        if verdict.why_not is not None:
            _notice(verdict.entry, verdict.why_not, env)
    proven = [v.entry for v in verdicts if v.why_not is None]
    marked = _write(proven, commit, settings, env) if proven else 0
    print(
        f"ci-tools: mark-green: {marked} of the shard's {len(entries)} stacks recorded green "
        f"at {commit[:12]}"
    )
    return 0


def _record(
    args: argparse.Namespace, env: Mapping[str, str], entries: Sequence[ShardEntry], root: Path
) -> int:
    """Write each proven entry's green for the run's publishing job (no request)."""
    from ci_tools.commands import _green_publish

    recorded = 0
    for verdict in judge(args, env, entries, root):
        if verdict.why_not is not None:
            _notice(verdict.entry, verdict.why_not, env)
            if (
                verdict.why_not.startswith(_green_publish.UNPROVEN)
                and verdict.entry.fingerprint
                and _nothing_failed(root / f"{ARTIFACT_PREFIX}{verdict.entry.name}", verdict.entry)
            ):
                # Its builds and tests passed and proved nothing this fleet checks: recorded,
                # so the next plan does not build it in vain. A failed build or check is
                # never "unprovable": the next push builds it again.
                _green_publish.record(
                    args.record, verdict.entry.name, verdict.entry.fingerprint, unprovable=True
                )
            continue
        assert verdict.entry.fingerprint is not None  # proven entries have one
        _green_publish.record(args.record, verdict.entry.name, verdict.entry.fingerprint)
        recorded += 1
        print(f"ci-tools: {statuses.context(verdict.entry.name)} proven: recorded for publishing")
    print(f"ci-tools: mark-green: {recorded} of {len(entries)} stacks proven")
    return 0


def _nothing_failed(folder: Path, entry: ShardEntry) -> bool:
    """Every package of the entry has records, and none of them shows a failed (or missing)
    build or a failed test: what was built passed whatever it could check."""
    from ci_tools.build import results
    from ci_tools.build.results import Status

    try:
        records = results.load_dir(folder)
    except InputError:
        return False
    seen = {record.variant for record in records}
    return set(entry.packages) <= seen and all(
        record.build is not None
        and record.build.status is Status.PASSED
        and record.test is not None
        and record.test.status is not Status.FAILED
        for record in records
    )


def judge(
    args: argparse.Namespace, env: Mapping[str, str], entries: Sequence[ShardEntry], root: Path
) -> list[Verdict]:
    """Each entry's verdict, every fingerprint recomputed in one pass per kind."""
    from ci_tools.plan.checkout import Checkout
    from ci_tools.plan.recompute import EntryFinder, current_fingerprints

    if not entries:
        return []
    branch = _branch(args, entries)
    cwd = Path.cwd()
    checkout = Checkout(root=cwd)
    of_branch = argparse.Namespace(**{**vars(args), "branch": branch})
    source = _planning.variants(of_branch, env, checkout)
    inventory = _planning.inventory(args.runners, cwd, source.sms, source.cpu_flags)
    finder = EntryFinder(source, inventory)
    found: dict[str, Entry] = {}
    why: dict[str, str] = {}
    by_kind: dict[kinds.FingerprintKind, list[Entry]] = {}
    for entry in entries:
        kind = kinds.kind_of(entry.fingerprint) if entry.fingerprint else None
        if kind is None:
            why[entry.name] = "planned without a fingerprint: nothing to record"
            continue
        try:
            found[entry.name] = finder.find(entry.name, entry.packages)
        except InputError as exc:
            why[entry.name] = f"refused: {exc}"
            continue
        by_kind.setdefault(kind, []).append(found[entry.name])
    current: dict[str, str] = {}
    for kind, same in by_kind.items():
        current.update(current_fingerprints(checkout, source, same, kind))
    head = _green.checked_out(cwd) if found else ""
    # The catalog once for the shard: the checks each package's records must show.
    names = [p for e in entries if e.name in found for p in e.packages]
    expected = _green.expectations(args, branch, names) if found else {}
    for entry in entries:
        if entry.name in found:
            scope = found[entry.name].placement.test.value
            why_not = _why_not(entry, scope, current[entry.name], root, head, expected)
            if why_not is not None:
                why[entry.name] = why_not
    return [Verdict(entry=e, why_not=why.get(e.name)) for e in entries]


def _why_not(
    entry: ShardEntry,
    scope: str,
    current: str,
    root: Path,
    head: str,
    expected: Mapping[str, Expectations],
) -> str | None:
    if entry.fingerprint != current:
        return (
            f"refused: {entry.fingerprint} is not its current fingerprint at this commit "
            f"({current}): planned at another commit, or by a Nix whose `nix-instantiate "
            "--parse` prints differently"
        )
    try:
        folder = root / f"{ARTIFACT_PREFIX}{entry.name}"
        missing = _green.unproven(folder, entry.packages, scope, head, expected)
    except InputError as exc:
        return f"no records to prove it: {exc}"
    return UNPROVEN + "; ".join(missing) if missing else None


def _branch(args: argparse.Namespace, entries: Sequence[ShardEntry]) -> str:
    branches = sorted({e.branch for e in entries})
    if len(branches) > 1:
        raise InputError(
            f"--shard {args.shard}: entries of branches {', '.join(branches)}; a shard is "
            "one branch's matrix"
        )
    if args.branch is not None and args.branch != branches[0]:
        raise InputError(f"--branch {args.branch}: the shard's entries are of branch {branches[0]}")
    return branches[0]


def _write(
    proven: Sequence[ShardEntry], commit: str, settings: Settings, env: Mapping[str, str]
) -> int:
    """Write each green, a second apart, until GitHub refuses one; how many were written."""
    from ci_tools.base import github_api

    api = github_api.connect_lazy(settings, POLICY, lambda line: ghoutput.notice(line, env))
    url = _green.run_url(env)
    refused: str | None = None
    marked = 0
    last: float | None = None
    for entry in proven:
        assert entry.fingerprint is not None  # proven entries have one
        if refused is not None:
            _notice(entry, "not tried after GitHub refused an earlier write of the shard", env)
            continue
        if last is not None:
            POLICY.sleep(max(0.0, last + WRITE_INTERVAL_SECONDS - POLICY.clock()))
        last = POLICY.clock()
        refused = statuses.mark_green(
            api, commit=commit, stack=entry.name, fingerprint=entry.fingerprint, target_url=url
        )
        if refused is not None:
            ghoutput.notice(f"mark-green: {settings.redact(refused)}", env)
            continue
        marked += 1
        print(
            f"ci-tools: {statuses.context(entry.name)} is green at {commit[:12]}: "
            f"{statuses.description(entry.fingerprint)}"
        )
    return marked


def _notice(entry: ShardEntry, why: str, env: Mapping[str, str]) -> None:
    ghoutput.notice(f"mark-green: {statuses.context(entry.name)} not recorded: {why}", env)
