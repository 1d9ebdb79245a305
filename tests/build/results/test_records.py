"""The record types: statuses and which records a release may publish."""

from __future__ import annotations

from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Check, Status
from tests.build.results.samples import sample_record


def test_test_status() -> None:
    passed, failed, skipped = (Check(name=s.value, status=s) for s in results.CHECK_STATUSES)
    assert results.test_status([passed, skipped]) is Status.PASSED
    assert results.test_status([passed, failed, skipped]) is Status.FAILED
    assert results.test_status([skipped, skipped]) is Status.SKIPPED


def test_only_built_and_tested_records_pass() -> None:
    record = sample_record()
    assert not record.passed
    assert record.with_test(results.TestOutcome(status=Status.PASSED)).passed
    assert (
        not record.with_build(BuildOutcome(status=Status.FAILED, seconds=1))
        .with_test(results.TestOutcome(status=Status.PASSED))
        .passed
    )
