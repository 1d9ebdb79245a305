"""authorise: only a record that passed at HEAD lets a variant publish; every other record is
refused with the reason and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, ResultRecord, Status
from ci_tools.ship import authorise
from ci_tools.ship.authorise import Refusal

HEAD = "1" * 40
OTHER = "2" * 40


def _record(
    *,
    build: Status | None = Status.PASSED,
    test: Status | None = Status.PASSED,
    commit: str | None = HEAD,
    name: str = "pytorch-python313-cpu-avx2",
    branch: str = "main",
) -> ResultRecord:
    return ResultRecord(
        variant=name,
        package="pytorch",
        branch=branch,
        platform="x86_64-linux",
        commit=commit,
        build=BuildOutcome(status=build, seconds=1.0) if build is not None else None,
        test=results.TestOutcome(status=test) if test is not None else None,
    )


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (None, Refusal.NO_RECORD),
        (_record(), None),
        (_record(commit=None), Refusal.NO_COMMIT),
        (_record(commit=OTHER), Refusal.OTHER_COMMIT),
        (_record(build=None, test=None), Refusal.NOT_BUILT),
        (_record(build=Status.FAILED), Refusal.BUILD_FAILED),
        (_record(build=Status.STARTED), Refusal.BUILD_FAILED),
        (_record(test=None), Refusal.NOT_TESTED),
        (_record(test=Status.FAILED), Refusal.TEST_FAILED),
        (_record(test=Status.SKIPPED), Refusal.TEST_SKIPPED),
        # A failed build is refused as such even when recorded at another commit.
        (_record(build=Status.FAILED, commit=OTHER), Refusal.BUILD_FAILED),
    ],
)
def test_refusal(record: ResultRecord | None, expected: Refusal | None) -> None:
    assert authorise.refusal(record, HEAD) is expected


def test_plan_keeps_the_order_asked_and_asks_each_once() -> None:
    records: dict[str, ResultRecord | None] = {
        "a": _record(name="a"),
        "b": _record(name="b", test=Status.FAILED),
        "c": _record(name="c"),
    }
    chosen = authorise.plan(["c", "b", "a", "c", "d"], records, HEAD)
    assert chosen.publish == ("c", "a")
    assert chosen.refused == (("b", Refusal.TEST_FAILED), ("d", Refusal.NO_RECORD))


def test_explain_names_both_commits() -> None:
    said = authorise.explain(_record(commit=OTHER), Refusal.OTHER_COMMIT, HEAD)
    assert said == f" ({OTHER[:12]}; HEAD is {HEAD[:12]}: build and test at HEAD first)"
    assert "recorded at HEAD" in authorise.explain(_record(commit=None), Refusal.NO_COMMIT, HEAD)
    assert "passed publish" in authorise.explain(None, Refusal.NO_RECORD, HEAD)


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
