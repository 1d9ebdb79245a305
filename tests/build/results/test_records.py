"""The record types: statuses and which records a release may publish."""

from __future__ import annotations

from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Check, Status
from tests.build.results.samples import sample_record


def test_test_status() -> None:
    passed, failed, skipped, static = (
        Check(name=s.value, status=s) for s in results.CHECK_STATUSES
    )
    assert results.test_status([passed, skipped]) is Status.PASSED
    assert results.test_status([passed, failed, skipped]) is Status.FAILED
    assert results.test_status([skipped, skipped]) is Status.SKIPPED
    assert results.test_status([static, skipped]) is Status.STATIC
    assert results.test_status([passed, static]) is Status.PASSED
    assert results.test_status([]) is Status.SKIPPED  # no checks prove nothing


def test_built_means_a_build_that_passed() -> None:
    record = sample_record()
    assert record.built
    assert not record.with_build(BuildOutcome(status=Status.FAILED, seconds=1)).built
    assert not record.with_build(BuildOutcome(status=Status.STARTED, seconds=0)).built
