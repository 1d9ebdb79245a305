"""A result record with every part filled in, and JSON edits, for the tests of build/results/."""

from __future__ import annotations

import json
from pathlib import Path

from ci_tools.build import results
from ci_tools.build.results import (
    BuildOutcome,
    Check,
    PublishOutcome,
    PublishStatus,
    ResultRecord,
    Status,
)


def sample_record() -> ResultRecord:
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


def sample_json() -> dict[str, object]:
    return json.loads(json.dumps(sample_record().to_json()))


def write_record(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "x.result.json"
    path.write_text(text, encoding="utf-8")
    return path


def set_field(data: dict[str, object], dotted: str, value: object) -> dict[str, object]:
    *parents, last = dotted.split(".")
    node: object = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]  # type: ignore[index]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value  # type: ignore[index]
    return data
