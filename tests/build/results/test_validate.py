"""The schema check: every malformed record is exit 2 naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.build import results
from tests.build.results.samples import sample_json, set_field, write_record


@pytest.mark.parametrize("schema", [None, 0, 3, "1"])
def test_unknown_schema_is_refused(tmp_path: Path, schema: object) -> None:
    path = tmp_path / "x.result.json"
    path.write_text(json.dumps({"schema": schema, "variant": "x"}), encoding="utf-8")
    with pytest.raises(InputError, match="is not supported"):
        results.load(path)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("test", "passed", 'test: must be an object or null, not "passed"'),
        ("build", [], "build: must be an object or null, not []"),
        (
            "build.closure_bytes",
            "abc",
            'build.closure_bytes: must be a whole number from 0 to 9007199254740991, not "abc"',
        ),
        (
            "build.closure_bytes",
            -1,
            "build.closure_bytes: must be a whole number from 0 to 9007199254740991, not -1",
        ),
        (
            "build.closure_bytes",
            1.5,
            "build.closure_bytes: must be a whole number from 0 to 9007199254740991, not 1.5",
        ),
        (
            "build.closure_bytes",
            True,
            "build.closure_bytes: must be a whole number from 0 to 9007199254740991, not true",
        ),
        ("build.seconds", -3, "build.seconds: must be a finite number of seconds >= 0, not -3"),
        ("build.seconds", "12", 'build.seconds: must be a finite number of seconds >= 0, not "12"'),
        ("build.seconds", None, "build.seconds: must be a finite number of seconds >= 0, not null"),
        (
            "build.status",
            "started?",
            "build.status: must be one of passed, failed, skipped, started",
        ),
        (
            "test.status",
            "started",
            "test.status: must be one of passed, failed, skipped, static, not",
        ),
        ("test.checks", {}, "test.checks: must be a list, not {}"),
        ("test.checks.0", "x", 'test.checks[0]: must be an object or null, not "x"'),
        ("test.checks.0.status", "ok", "test.checks[0].status: must be one of passed, failed"),
        ("test.checks.0.name", 3, "test.checks[0].name: must be a string, not 3"),
        ("publish.status", "done", "publish.status: must be one of published, failed, dry-run"),
        (
            "publish.attempts",
            -2,
            "publish.attempts: must be a whole number from 0 to 9007199254740991, not -2",
        ),
        # Issue 20 item 10: 10**400 bytes made report and release raise OverflowError.
        (
            "build.closure_bytes",
            10**400,
            "build.closure_bytes: must be a whole number from 0 to 9007199254740991, not 1000",
        ),
        ("variant", "a b; rm -rf ~", 'variant: "a b; rm -rf ~" is not a valid name'),
        ("variant", None, "variant: must be a string, not null"),
        ("branch", "", 'branch: "" is not a valid name'),
        ("runner", 7, "runner: must be a string, not 7"),
        ("extra", 1, "extra: unknown field"),
        ("build.sconds", 1, "build.sconds: unknown field"),
        ("test.figures", {"import_seconds": -1.0}, "test.figures.import_seconds: must be a finite"),
        ("test.figures", {"package_bytes": -1}, "test.figures.package_bytes: must be a whole"),
        ("test.figures", {"package_bytes": True}, "test.figures.package_bytes: must be a whole"),
        (
            "test.figures",
            {"libraries": [{"name": "libtorch_cpu.so"}]},
            "test.figures.libraries[0].bytes: missing",
        ),
    ],
)
def test_malformed_fields_are_named(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = write_record(tmp_path, json.dumps(set_field(sample_json(), field, value)))
    with pytest.raises(InputError) as caught:
        results.load(path)
    assert str(caught.value).startswith(f"{path}: malformed result record: ")
    assert message in str(caught.value)


def test_a_missing_required_field_is_named(tmp_path: Path) -> None:
    data = sample_json()
    del data["platform"]
    with pytest.raises(InputError, match="malformed result record: platform: missing"):
        results.load(write_record(tmp_path, json.dumps(data)))
    data = sample_json()
    del data["build"]["seconds"]  # type: ignore[attr-defined]
    with pytest.raises(InputError, match=r"build\.seconds: missing"):
        results.load(write_record(tmp_path, json.dumps(data)))


def test_schema_must_be_the_integer_one(tmp_path: Path) -> None:
    for schema in (True, 1.0):
        data = {**sample_json(), "schema": schema}
        with pytest.raises(InputError, match="is not supported"):
            results.load(write_record(tmp_path, json.dumps(data)))
