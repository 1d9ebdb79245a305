"""A build record's outputs: store path, NAR hash, NAR size, read back and checked field by
field (issue 29 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import Output
from tests.build.results.samples import sample_json

PATH = "/nix/store/mz8933sqf5hshfwxx58gb7152asdp4y6-pytorch-python313-cpu-avx2-2.9.1"
HASH = "sha256-/HGClOh0WbqW+4FonkXSTUnqA1WYVM12RYHshoFkrW4="


def _read(tmp_path: Path, text: str) -> results.ResultRecord:
    return results.parse(text, str(tmp_path / "r.json"))


def _with_outputs(outputs: object) -> str:
    data = sample_json()
    data["build"]["outputs"] = outputs  # type: ignore[index]
    return json.dumps(data)


def test_outputs_round_trip(tmp_path: Path) -> None:
    text = _with_outputs([{"store_path": PATH, "nar_hash": HASH, "nar_size": 648}])
    record = _read(tmp_path, text)
    assert record.build is not None
    assert record.build.outputs == (Output(store_path=PATH, nar_hash=HASH, nar_size=648),)
    assert record.build.output(PATH) == record.build.outputs[0]
    assert results.from_json(json.loads(json.dumps(record.to_json())), "again") == record


def test_a_record_without_outputs_reads_as_none(tmp_path: Path) -> None:
    record = _read(tmp_path, json.dumps(sample_json()))
    assert record.build is not None and record.build.outputs == ()


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ({}, "build.outputs: must be a list"),
        ([{"store_path": PATH, "nar_hash": "md5-x", "nar_size": 1}], "outputs[0].nar_hash"),
        ([{"store_path": "-v", "nar_hash": HASH, "nar_size": 1}], "outputs[0].store_path"),
        ([{"store_path": PATH + "/../x", "nar_hash": HASH, "nar_size": 1}], "store_path"),
        ([{"store_path": PATH, "nar_hash": HASH}], "outputs[0].nar_size: missing"),
        ([{"store_path": PATH, "nar_hash": HASH, "nar_size": -1}], "outputs[0].nar_size"),
        ([{"store_path": PATH, "nar_hash": HASH, "nar_size": 1, "x": 1}], "unknown field"),
    ],
)
def test_malformed_outputs_are_named(tmp_path: Path, outputs: object, message: str) -> None:
    with pytest.raises(InputError, match="malformed result record") as caught:
        _read(tmp_path, _with_outputs(outputs))
    assert message in str(caught.value)
