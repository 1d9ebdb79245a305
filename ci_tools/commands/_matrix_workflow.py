"""What the workflow's call of `ci-tools matrix` adds to a plain matrix: each entry's input
fingerprint and the schedule (`--fingerprints`, `--since`, `--until-green`), and the shards
it writes to $GITHUB_OUTPUT (`--github-output`).

Apart from `matrix` so that a plain matrix (a person's look at what a branch builds) does
not compile it at every start.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base import ghoutput
from ci_tools.base.errors import InputError
from ci_tools.plan import matrix, source
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.kinds import FingerprintKind
from ci_tools.plan.matrix import Entry

if TYPE_CHECKING:
    from ci_tools.plan.nixinputs import NixReader


def read_ahead(args: argparse.Namespace, checkout: Checkout) -> NixReader | None:
    """Where every stack is fingerprinted at HEAD (`--github-output`, `--fingerprints`,
    `--until-green`): the reader the fingerprints will use, with Nix already parsing HEAD's
    recipes and shared code, while the catalog loads. None where nothing is started: `--since`
    alone (it parses the few files a push may have changed, known once the catalog is; a
    guess made before, from the trees, saved about 5 ms, and cost a second start where a
    recipe imports a changed one), a reader that cannot be had, a tree that cannot be read
    (the schedule asks again, and says why where it always did)."""
    if not (args.fingerprints or args.github_output or args.until_green):
        return None
    if args.since is not None and not args.until_green:
        return None
    from ci_tools.plan.fingerprint import every_start
    from ci_tools.plan.schedule import reader_for

    try:
        reader = reader_for(
            FingerprintKind(args.fingerprint_kind) if args.fingerprint_kind else None
        )
        if reader.use_nix:
            head = checkout.head
            reader.begin([head.load(every_start(head))])
    except (InputError, OSError):
        return None
    return reader


def scheduled(
    args: argparse.Namespace,
    planned: Sequence[Entry],
    variants: source.Source,
    checkout: Checkout,
    env: Mapping[str, str],
    reader: NixReader | None = None,
) -> tuple[list[Entry], str, FingerprintKind]:
    """The entries to build, each with its fingerprint; when none is left, why; and the
    fingerprints' kind (`reader`: the one `read_ahead` started, if any)."""
    # Imported only here: fingerprints cost git reads and a Nix parse that a plain matrix
    # (a person's look at what a branch builds) never needs.
    from ci_tools.plan.schedule import Schedule, schedule_stacks

    schedule = Schedule(
        until_green=args.until_green,
        since=args.since,
        lookback=args.lookback,
        max_api_calls=args.max_api_calls,
        kind=FingerprintKind(args.fingerprint_kind) if args.fingerprint_kind else None,
        trusted=tuple(args.trusted_creator),
        # Only green records are read against the fleet: without --until-green, none is.
        inventory=_inventory_digest(args, checkout) if args.until_green else None,
    )
    stacks = {e.name: e.packages for e in planned}
    done = schedule_stacks(
        schedule, checkout, stacks, variants.head_facts(), variants.facts_at, env, reader
    )
    entries = [
        replace(e, fingerprint=done.fingerprints[e.name])
        for e in planned
        if done.keep is None or e.name in done.keep
    ]
    return entries, done.why_empty, done.kind


def write_outputs(
    output: Path,
    entries: list[Entry],
    args: argparse.Namespace,
    kind: FingerprintKind | None,
    env: Mapping[str, str],
) -> list[Entry]:
    """Write what one run can take to $GITHUB_OUTPUT (`output`), sharded; return those
    entries. Notices say what waits, how it is sharded and the fingerprints' kind."""
    from ci_tools.plan import sharding  # only --github-output shards

    entries = _fit(entries, args, env)
    outputs = sharding.github_outputs(matrix.rows(entries), args.max_shards)
    _say_shards(len(entries), int(outputs["shards"]), env)
    # `kind` is set: --github-output always fingerprints.
    ghoutput.notice(
        f"fingerprints: {kind.description if kind else '-'} ({kind}-...); greens of "
        "another kind are never compared with them",
        env,
    )
    ghoutput.append_outputs(output, {**outputs, "fingerprint-kind": str(kind)})
    return entries


def _fit(entries: list[Entry], args: argparse.Namespace, env: Mapping[str, str]) -> list[Entry]:
    """What one run can take; a notice names the rest, which wait for the next run."""
    from ci_tools.plan import sharding

    kept = sharding.fit(matrix.rows(entries), args.max_shards)
    waiting = [e.name for e in entries[kept:]]
    if waiting:
        later = (
            "the next push plans them (--until-green: each stack turned green leaves room)"
            if args.until_green
            else "without --until-green nothing plans them again until their inputs change"
        )
        shown = ", ".join(waiting[:20]) + (
            f" and {len(waiting) - 20} more" if len(waiting) > 20 else ""
        )
        ghoutput.notice(
            f"{len(waiting)} of {len(entries)} stacks wait for the next run: one run takes at "
            f"most {args.max_shards} matrices of {matrix.SHARD_SIZE} entries within GitHub's "
            f"1 MB of job outputs, each within what one environment variable holds "
            f"({sharding.SHARD_TEXT_BUDGET} bytes); {later}. Waiting: {shown}",
            env,
        )
    return entries[:kept]


def _inventory_digest(args: argparse.Namespace, checkout: Checkout) -> str:
    """What identifies the fleet for unprovable records: runners.yaml's bytes."""
    from ci_tools.catalog import layout
    from ci_tools.plan import greens_aggregate

    path = args.runners if args.runners is not None else checkout.root / layout.RUNNERS
    return greens_aggregate.inventory_digest(path)


def _say_shards(count: int, shards: int, env: Mapping[str, str]) -> None:
    if shards > 1:
        ghoutput.notice(
            f"{count} entries are more than GitHub's {matrix.SHARD_SIZE} per matrix: "
            f"split into {shards} shards (matrix-0 ... matrix-{shards - 1})",
            env,
        )
