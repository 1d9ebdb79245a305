"""The result record: JSON round trip, schema refusal, statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools import results
from ci_tools.errors import InputError
from ci_tools.results import (
    BuildOutcome,
    Check,
    PublishOutcome,
    PublishStatus,
    ResultRecord,
    Status,
)


def _record() -> ResultRecord:
    return ResultRecord(
        variant="pytorch-python313-cpu-avx2",
        package="pytorch",
        branch="main",
        platform="x86_64-linux",
        commit="abc",
        runner="r1",
        build=BuildOutcome(
            status=Status.PASSED,
            seconds=12.5,
            store_path="/nix/store/x",
            closure_bytes=10,
            attempts=2,
        ),
        test=results.TestOutcome(
            status=Status.FAILED,
            checks=(Check(name="torch-version", status=Status.FAILED, detail="2.13.0 vs 2.8.0"),),
        ),
        publish=PublishOutcome(status=PublishStatus.DRY_RUN, org="acme"),
    )


def test_round_trip(tmp_path: Path) -> None:
    path = results.result_path(tmp_path, "pytorch-python313-cpu-avx2")
    assert path.name == "pytorch-python313-cpu-avx2.result.json"
    results.save(_record(), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert next(iter(data)) == "schema" and data["schema"] == 1
    assert data["test"]["checks"] == [
        {"name": "torch-version", "status": "failed", "detail": "2.13.0 vs 2.8.0"}
    ]
    assert results.load(path) == _record()


@pytest.mark.parametrize("schema", [None, 0, 2, "1"])
def test_unknown_schema_is_refused(tmp_path: Path, schema: object) -> None:
    path = tmp_path / "x.result.json"
    path.write_text(json.dumps({"schema": schema, "variant": "x"}), encoding="utf-8")
    with pytest.raises(InputError, match="is not supported"):
        results.load(path)


def test_malformed_record_is_input_error(tmp_path: Path) -> None:
    path = tmp_path / "x.result.json"
    path.write_text(json.dumps({"schema": 1, "variant": "x"}), encoding="utf-8")
    with pytest.raises(InputError, match="malformed result record"):
        results.load(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not a readable result record"):
        results.load(path)


def test_test_status() -> None:
    passed, failed, skipped = (Check(name=s.value, status=s) for s in Status)
    assert results.test_status([passed, skipped]) is Status.PASSED
    assert results.test_status([passed, failed, skipped]) is Status.FAILED
    assert results.test_status([skipped, skipped]) is Status.SKIPPED


def test_only_built_and_tested_records_pass() -> None:
    record = _record()
    assert not record.passed
    assert record.with_test(results.TestOutcome(status=Status.PASSED)).passed
    assert (
        not record.with_build(BuildOutcome(status=Status.FAILED, seconds=1))
        .with_test(results.TestOutcome(status=Status.PASSED))
        .passed
    )
