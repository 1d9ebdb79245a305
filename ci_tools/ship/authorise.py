"""Which variants may be published from a commit: only those whose result record says their
build and their test passed AT THAT COMMIT (the checkout's HEAD); a record of another commit
proves nothing about what HEAD builds. Pure, but for reading the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import ResultRecord, Status


class Refusal(StrEnum):
    NO_RECORD = "no result record"
    NOT_BUILT = "not built"
    BUILD_FAILED = "build failed"
    NOT_TESTED = "not tested"
    TEST_FAILED = "test failed"
    TEST_SKIPPED = "test skipped"
    NO_COMMIT = "the record names no commit"
    OTHER_COMMIT = "built and tested at another commit"


def refusal(record: ResultRecord | None, head: str) -> Refusal | None:
    """Why a variant must not be published from commit `head`; None when its record says it
    passed at that commit."""
    if record is None:
        return Refusal.NO_RECORD
    if record.passed:
        if record.commit is None:
            return Refusal.NO_COMMIT
        if record.commit != head:
            return Refusal.OTHER_COMMIT
        return None
    if record.build is None:
        return Refusal.NOT_BUILT
    if record.build.status is not Status.PASSED:
        return Refusal.BUILD_FAILED
    if record.test is None:
        return Refusal.NOT_TESTED
    if record.test.status is Status.FAILED:
        return Refusal.TEST_FAILED
    return Refusal.TEST_SKIPPED


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a publish run will do with each named variant: `flox publish` the authorised ones
    (flox skips what FloxHub already has from this commit), refuse the rest."""

    publish: tuple[str, ...]
    refused: tuple[tuple[str, Refusal], ...]


def plan(variants: Sequence[str], records: dict[str, ResultRecord | None], head: str) -> Plan:
    to_publish: list[str] = []
    refused: list[tuple[str, Refusal]] = []
    for name in dict.fromkeys(variants):
        reason = refusal(records.get(name), head)
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


def explain(record: ResultRecord | None, reason: Refusal, head: str) -> str:
    """The hint printed after a refusal: what would let the variant publish."""
    if reason is Refusal.OTHER_COMMIT and record is not None and record.commit is not None:
        return f" ({record.commit[:12]}; HEAD is {head[:12]}: build and test at HEAD first)"
    if reason is Refusal.NO_COMMIT:
        return " (only a build and test recorded at HEAD may publish)"
    return " (only variants whose build and test passed publish)"
