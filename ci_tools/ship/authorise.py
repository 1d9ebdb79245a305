"""Which variants may be published from a commit: only those whose result record proves them
as the publish policy asks (`ci_tools/build/policy.py`) AT THAT COMMIT (the checkout's HEAD);
a record of another commit proves nothing about what HEAD builds. Pure, but for reading the
records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ci_tools.base.errors import InputError
from ci_tools.build import policy, results
from ci_tools.build.results import ResultRecord
from ci_tools.build.smoke.expect import Expectations


class Refusal(StrEnum):
    """Why a record does not let its variant publish from HEAD, beyond what the publish
    policy says of its proof (`policy.judge`, whose reason is given as it is)."""

    NO_RECORD = "no result record"
    NO_COMMIT = "the record names no commit"
    OTHER_COMMIT = "built and tested at another commit"
    POLICY = "the publish policy refuses it"


@dataclass(frozen=True, kw_only=True)
class Refused:
    reason: Refusal
    why: str  # the policy's words, or the reason's own

    def __str__(self) -> str:
        return self.why


def refusal(
    record: ResultRecord | None, head: str, scope: str, expect: Expectations | None
) -> Refused | None:
    """Why a variant must not be published from commit `head`, the fleet being able to do
    `scope` for it (its route); None when its record proves it at that commit as the
    publish policy asks, against the checks the catalog's expectations (`expect`) ask."""
    if record is None:
        return Refused(reason=Refusal.NO_RECORD, why=Refusal.NO_RECORD.value)
    verdict = policy.judge(record, scope, expect)
    if not verdict.allowed:
        return Refused(reason=Refusal.POLICY, why=verdict.why)
    if record.commit is None:
        return Refused(reason=Refusal.NO_COMMIT, why=Refusal.NO_COMMIT.value)
    if record.commit != head:
        return Refused(reason=Refusal.OTHER_COMMIT, why=Refusal.OTHER_COMMIT.value)
    return None


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a publish run will do with each named variant: `flox publish` the authorised ones
    (flox skips what FloxHub already has from this commit), refuse the rest."""

    publish: tuple[str, ...]
    refused: tuple[tuple[str, Refused], ...]


def plan(
    variants: Sequence[str],
    records: dict[str, ResultRecord | None],
    head: str,
    scopes: Mapping[str, str],
    expected: Mapping[str, Expectations],
) -> Plan:
    """`scopes`: each variant's route (what the fleet can do for it); a variant without one
    is asked for static proofs at least. `expected`: the catalog's expectations of each
    variant; a variant without them is proven by no record."""
    to_publish: list[str] = []
    refused: list[tuple[str, Refused]] = []
    for name in dict.fromkeys(variants):
        reason = refusal(records.get(name), head, scopes.get(name, "static"), expected.get(name))
        if reason is not None:
            refused.append((name, reason))
        else:
            to_publish.append(name)
    return Plan(publish=tuple(to_publish), refused=tuple(refused))


def load_records(
    results_dir: Path, variants: Sequence[str], branch: str | None
) -> dict[str, ResultRecord | None]:
    """The record of each variant, None where there is none. CPU variants have the same name
    on every branch, so a record of another branch is refused rather than trusted."""
    out: dict[str, ResultRecord | None] = {}
    for name in variants:
        path = results.result_path(results_dir, name)
        record = results.load(path) if path.exists() else None
        if record is not None and branch is not None and record.branch != branch:
            raise InputError(f"{path}: a record of branch {record.branch}, not {branch}")
        out[name] = record
    return out


def explain(record: ResultRecord | None, refused: Refused, head: str) -> str:
    """The hint printed after a refusal: what would let the variant publish."""
    reason = refused.reason
    if reason is Refusal.OTHER_COMMIT and record is not None and record.commit is not None:
        return f" ({record.commit[:12]}; HEAD is {head[:12]}: build and test at HEAD first)"
    if reason is Refusal.NO_COMMIT:
        return " (only a build and test recorded at HEAD may publish)"
    return (
        " (a variant publishes when it ran on a runner that can run it, or, where none "
        "can, when its static proofs held)"
    )
