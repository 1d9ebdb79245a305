"""What each branch's newest GitHub release says was published, checked before the page shows it.

Pure: release listings, the tag's commit and an asset's JSON in; records, or the reason an
asset is not believed (`Untrusted`), out. `ci_tools.ship.released_fetch` does the talking.

One GitHub Pages site shows every branch, and each release replaces it: so the page takes each
branch's published variants from that branch's newest release (its `results-<tag>.json` asset,
`release.summary`), and this run's records win for their variants. The asset is a file anyone
with write access could replace, so nothing it says of itself is believed: its commit must be
where its tag points, its branch the one its tag names, and every record one of that branch's
variants at that commit; an asset failing any check is left out whole.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import ResultRecord
from ci_tools.ship import release

# `release.tag_for`: the branch, a dash, the commit's first SHORT_SHA hex digits. The suffix
# has a fixed length, so a branch name with dashes in it (`cuda-12_9`) still parses one way.
_TAG = re.compile(rf"(?P<branch>.+)-(?P<short>[0-9a-f]{{{release.SHORT_SHA}}})")


class Untrusted(Exception):
    """An asset that fails a check; the message says which, for the notice."""


@dataclass(frozen=True, kw_only=True)
class Listed:
    """One release of the listing, as far as choosing among them needs."""

    tag: str
    draft: bool
    created: str  # ISO 8601 UTC ("2026-11-22T04:00:00Z"), "" when GitHub gave none


@dataclass(frozen=True, kw_only=True)
class Shelf:
    """The published records of one checked asset."""

    records: tuple[ResultRecord, ...]  # published to the page's org
    elsewhere: tuple[str, ...]  # variants published, but to another org (no install line here)


def branch_of(tag: str, branches: Collection[str]) -> str | None:
    """The branch among `branches` whose release tag `tag` is; None for any other tag."""
    found = _TAG.fullmatch(tag)
    return found.group("branch") if found and found.group("branch") in branches else None


def newest(listed: Sequence[Listed], branches: Collection[str]) -> dict[str, int]:
    """Branch -> index in `listed` of its newest release (`recent`'s first)."""
    return {branch: found[0] for branch, found in recent(listed, branches, 1).items()}


def recent(listed: Sequence[Listed], branches: Collection[str], count: int) -> dict[str, list[int]]:
    """Branch -> indexes in `listed` of its `count` newest releases, newest first. A draft is
    left out (nothing was published under it); the latest `created` wins, and on a tie, or
    with no time, the first listed (GitHub answers newest first, though its reference
    promises no order)."""
    by_branch: dict[str, list[int]] = {}
    for index, entry in enumerate(listed):
        branch = branch_of(entry.tag, branches)
        if branch is not None and not entry.draft:
            by_branch.setdefault(branch, []).append(index)
    return {
        branch: sorted(found, key=lambda i: (listed[i].created, -i), reverse=True)[:count]
        for branch, found in by_branch.items()
    }


def checked(
    asset: Any, *, tag: str, branch: str, commit: str | None, variants: Collection[str], org: str
) -> Shelf:
    """The records `asset` (the JSON of release `tag`'s results asset) holds as published,
    once every check holds; Untrusted naming the first that fails. `commit`: where the tag
    points (None: the tag does not exist). `variants`: the branch's variants in the catalog."""
    if commit is None:
        raise Untrusted(f"tag {tag} does not exist")
    if release.tag_for(branch, commit) != tag:
        raise Untrusted(f"tag {tag} points at commit {commit}, which that tag does not name")
    if not isinstance(asset, dict) or not isinstance(asset.get("variants"), list):
        raise Untrusted("the asset is not a release results asset (no `variants` list)")
    for key, want in (("tag", tag), ("branch", branch), ("commit", commit)):
        if asset.get(key) != want:
            raise Untrusted(f"the asset says {key} {asset.get(key)!r}, the release is of {want}")
    published, elsewhere = [], []
    seen: set[str] = set()
    for index, entry in enumerate(asset["variants"]):
        record = _entry(entry, f"variants[{index}]", branch, commit, variants)
        if record is None:
            continue
        if record.variant in seen:
            raise Untrusted(f"two entries for {record.variant}")
        seen.add(record.variant)
        if record.publish is not None and record.publish.org == org:
            published.append(record)
        else:
            elsewhere.append(record.variant)
    return Shelf(records=tuple(published), elsewhere=tuple(elsewhere))


def _entry(
    entry: Any, where: str, branch: str, commit: str, variants: Collection[str]
) -> ResultRecord | None:
    """The entry's record when the entry says it was published (None when it does not)."""
    if not isinstance(entry, dict):
        raise Untrusted(f"{where} is not an object")
    said = entry.get("outcome") == release.Outcome.PUBLISHED.value
    if entry.get("record") is None:
        if said:
            raise Untrusted(f"{where} is published but has no record")
        return None
    try:
        record = results.from_json(entry["record"], f"{where}.record")
    except InputError as exc:
        raise Untrusted(str(exc)) from None
    if said != record.published:
        raise Untrusted(
            f"{where}: its outcome ({entry.get('outcome')!r}) and its record's publish status "
            "disagree"
        )
    if entry.get("variant") != record.variant:
        raise Untrusted(f"{where} is for {entry.get('variant')!r}, its record for {record.variant}")
    if record.branch != branch or record.variant not in variants:
        raise Untrusted(
            f"{where}: {record.variant} (branch {record.branch}) is not a variant of {branch} "
            "in this catalog"
        )
    if record.commit is None or record.commit.lower() != commit:
        said_commit = f"commit {record.commit}" if record.commit else "no commit"
        raise Untrusted(f"{where}: the record of {record.variant} names {said_commit}")
    return record if said else None


def merge(run: Iterable[ResultRecord], released: Iterable[ResultRecord]) -> list[ResultRecord]:
    """The released records of every variant this run has no record of, then this run's: a
    record of this run wins (the page keeps the last record of a variant)."""
    mine = list(run)
    have = {(r.branch, r.variant) for r in mine}
    return [r for r in released if (r.branch, r.variant) not in have] + mine
