"""authorise: only a record that passed at HEAD lets a variant publish; every other record is
refused with the reason and what to do."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Check, ResultRecord, Status
from ci_tools.ship import authorise
from ci_tools.ship.authorise import Refusal
from tests import proven

HEAD = "1" * 40
OTHER = "2" * 40
AVX2 = "pytorch-python313-cpu-avx2"
RAN = proven.ran(proven.repo_expect("main", AVX2))
_RAN: tuple[Check, ...] = ()  # the checks `ci-tools test` makes for the record's variant


def _record(
    *,
    build: Status | None = Status.PASSED,
    checks: tuple[Check, ...] | None = _RAN,
    commit: str | None = HEAD,
    name: str = AVX2,
    branch: str = "main",
) -> ResultRecord:
    if checks is _RAN:
        checks = proven.ran(proven.repo_expect(branch, name))
    return ResultRecord(
        variant=name,
        package="pytorch",
        branch=branch,
        platform="x86_64-linux",
        commit=commit,
        build=BuildOutcome(status=build, seconds=1.0) if build is not None else None,
        test=(
            results.TestOutcome(status=results.test_status(checks), checks=checks)
            if checks is not None
            else None
        ),
    )


def _with(status: Status, detail: str) -> tuple[Check, ...]:
    return tuple(
        replace(c, status=status, detail=detail) if c.name == "cpu-mlp" else c for c in RAN
    )


FAILED = _with(Status.FAILED, "nan")
SKIPPED = _with(Status.SKIPPED, "this host's CPU lacks avx2")


def _refusal(record: ResultRecord | None, scope: str) -> authorise.Refused | None:
    return authorise.refusal(
        record, HEAD, scope, proven.repo_expect_of(record) if record is not None else None
    )


@pytest.mark.parametrize(
    ("record", "reason", "why"),
    [
        (None, Refusal.NO_RECORD, "no result record"),
        (_record(), None, ""),
        (_record(commit=None), Refusal.NO_COMMIT, "the record names no commit"),
        (_record(commit=OTHER), Refusal.OTHER_COMMIT, "built and tested at another commit"),
        (_record(build=None, checks=None), Refusal.POLICY, "not built"),
        (_record(build=Status.FAILED), Refusal.POLICY, "build failed"),
        (_record(build=Status.STARTED), Refusal.POLICY, "build failed"),
        (_record(checks=None), Refusal.POLICY, "not tested"),
        (_record(checks=FAILED), Refusal.POLICY, "test failed: cpu-mlp"),
        (_record(checks=SKIPPED), Refusal.POLICY, "unproven"),
        # A failed build is refused as such even when recorded at another commit.
        (_record(build=Status.FAILED, commit=OTHER), Refusal.POLICY, "build failed"),
    ],
)
def test_refusal(record: ResultRecord | None, reason: Refusal | None, why: str) -> None:
    refused = _refusal(record, "cpu")
    if reason is None:
        assert refused is None
    else:
        assert refused is not None and refused.reason is reason
        assert str(refused).startswith(why)


def test_a_record_is_judged_by_what_the_fleet_can_do_for_it() -> None:
    record = _record(checks=proven.static(proven.repo_expect("main", AVX2)))
    assert _refusal(record, "static") is None
    refused = _refusal(record, "cpu")
    assert refused is not None and "proven only static, but the fleet can do ran" in str(refused)


def test_plan_keeps_the_order_asked_and_asks_each_once() -> None:
    records: dict[str, ResultRecord | None] = {
        "a": _record(name="pytorch-python313-cpu-avx2"),
        "b": _record(name="pytorch-python313-cpu-avx512", checks=FAILED),
        "c": _record(name="pytorch-python313-cpu-avx512bf16"),
    }
    names = {"a": "pytorch-python313-cpu-avx2", "b": "pytorch-python313-cpu-avx512"}
    names["c"] = "pytorch-python313-cpu-avx512bf16"
    keyed = {names[k]: v for k, v in records.items()}
    order = [names["c"], names["b"], names["a"], names["c"], "pytorch-python313-cpu-avx"]
    expected = {n: proven.repo_expect("main", n) for n in keyed}
    chosen = authorise.plan(order, keyed, HEAD, dict.fromkeys(keyed, "cpu"), expected)
    assert chosen.publish == (names["c"], names["a"])
    assert [(n, r.reason) for n, r in chosen.refused] == [
        (names["b"], Refusal.POLICY),
        ("pytorch-python313-cpu-avx", Refusal.NO_RECORD),
    ]


def test_explain_names_both_commits() -> None:
    other = _refusal(_record(commit=OTHER), "cpu")
    assert other is not None
    said = authorise.explain(_record(commit=OTHER), other, HEAD)
    assert said == f" ({OTHER[:12]}; HEAD is {HEAD[:12]}: build and test at HEAD first)"
    none = _refusal(_record(commit=None), "cpu")
    assert none is not None
    assert "recorded at HEAD" in authorise.explain(_record(commit=None), none, HEAD)
    missing = _refusal(None, "cpu")
    assert missing is not None
    assert "static proofs held" in authorise.explain(None, missing, HEAD)


def test_load_records(tmp_path: Path) -> None:
    results.save(_record(), results.result_path(tmp_path, "pytorch-python313-cpu-avx2"))
    loaded = authorise.load_records(tmp_path, ["pytorch-python313-cpu-avx2", "missing"], "main")
    assert loaded == {"pytorch-python313-cpu-avx2": _record(), "missing": None}
    # A CPU variant has the same name on every branch: a record of another branch proves nothing.
    with pytest.raises(InputError, match="a record of branch main, not cuda-12_9"):
        authorise.load_records(tmp_path, ["pytorch-python313-cpu-avx2"], "cuda-12_9")
    assert authorise.load_records(tmp_path, ["pytorch-python313-cpu-avx2"], None) == {
        "pytorch-python313-cpu-avx2": _record()
    }


@pytest.mark.parametrize(
    ("checks", "why"),
    [
        (FAILED, "test failed: cpu-mlp"),
        (SKIPPED, "unproven"),
        ((), "unproven"),
    ],
)
def test_a_record_that_says_passed_over_checks_that_proved_nothing_is_refused(
    checks: tuple[Check, ...], why: str
) -> None:
    # Issue 20 item 7: test.status is not trusted; the checks are.
    said_passed = _record(checks=checks)
    said_passed = said_passed.with_test(results.TestOutcome(status=Status.PASSED, checks=checks))
    for scope in ("gpu", "cpu", "static"):
        refused = _refusal(said_passed, scope)
        assert refused is not None and str(refused).startswith(why), scope


def test_a_record_saved_under_another_variants_name_does_not_publish_it(tmp_path: Path) -> None:
    # Issue 20 item 7: A's passing record saved as B.result.json.
    other = "pytorch-python313-cpu-avx512"
    results.save(_record(), results.result_path(tmp_path, other))
    with pytest.raises(
        InputError, match=f"holds the record of pytorch-python313-cpu-avx2, not of {other}"
    ):
        authorise.load_records(tmp_path, [other], "main")
