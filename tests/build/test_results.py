"""The result record: JSON round trip, schema refusal, statuses."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import (
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
    passed, failed, skipped = (Check(name=s.value, status=s) for s in results.CHECK_STATUSES)
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


# --- the schema-checked loader: every malformed record is exit 2 naming file and field ------


def _good() -> dict[str, object]:
    return json.loads(json.dumps(_record().to_json()))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "x.result.json"
    path.write_text(text, encoding="utf-8")
    return path


def _set(data: dict[str, object], dotted: str, value: object) -> dict[str, object]:
    *parents, last = dotted.split(".")
    node: object = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]  # type: ignore[index]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value  # type: ignore[index]
    return data


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("test", "passed", 'test: must be an object or null, not "passed"'),
        ("build", [], "build: must be an object or null, not []"),
        (
            "build.closure_bytes",
            "abc",
            'build.closure_bytes: must be a whole number >= 0, not "abc"',
        ),
        ("build.closure_bytes", -1, "build.closure_bytes: must be a whole number >= 0, not -1"),
        ("build.closure_bytes", 1.5, "build.closure_bytes: must be a whole number >= 0, not 1.5"),
        ("build.closure_bytes", True, "build.closure_bytes: must be a whole number >= 0, not true"),
        ("build.seconds", -3, "build.seconds: must be a finite number of seconds >= 0, not -3"),
        ("build.seconds", "12", 'build.seconds: must be a finite number of seconds >= 0, not "12"'),
        ("build.seconds", None, "build.seconds: must be a finite number of seconds >= 0, not null"),
        (
            "build.status",
            "started?",
            "build.status: must be one of passed, failed, skipped, started",
        ),
        ("test.status", "started", "test.status: must be one of passed, failed, skipped, not"),
        ("test.checks", {}, "test.checks: must be a list, not {}"),
        ("test.checks.0", "x", 'test.checks[0]: must be an object or null, not "x"'),
        ("test.checks.0.status", "ok", "test.checks[0].status: must be one of passed, failed"),
        ("test.checks.0.name", 3, "test.checks[0].name: must be a string, not 3"),
        ("publish.status", "done", "publish.status: must be one of published, failed, dry-run"),
        ("publish.attempts", -2, "publish.attempts: must be a whole number >= 0, not -2"),
        ("variant", "a b; rm -rf ~", 'variant: "a b; rm -rf ~" is not a valid name'),
        ("variant", None, "variant: must be a string, not null"),
        ("branch", "", 'branch: "" is not a valid name'),
        ("runner", 7, "runner: must be a string, not 7"),
        ("extra", 1, "extra: unknown field"),
        ("build.sconds", 1, "build.sconds: unknown field"),
        ("test.figures", {"import_seconds": -1.0}, "test.figures.import_seconds: must be a finite"),
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
    path = _write(tmp_path, json.dumps(_set(_good(), field, value)))
    with pytest.raises(InputError) as caught:
        results.load(path)
    assert str(caught.value).startswith(f"{path}: malformed result record: ")
    assert message in str(caught.value)


def test_a_missing_required_field_is_named(tmp_path: Path) -> None:
    data = _good()
    del data["platform"]
    with pytest.raises(InputError, match="malformed result record: platform: missing"):
        results.load(_write(tmp_path, json.dumps(data)))
    data = _good()
    del data["build"]["seconds"]  # type: ignore[attr-defined]
    with pytest.raises(InputError, match=r"build\.seconds: missing"):
        results.load(_write(tmp_path, json.dumps(data)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema": 1, "build": {"seconds": NaN}}', "NaN is not a JSON number"),
        ('{"schema": 1, "build": {"seconds": Infinity}}', "Infinity is not a JSON number"),
        ('{"schema": 1, "build": {"seconds": -Infinity}}', "-Infinity is not a JSON number"),
        ('{"schema": 1, "build": {"seconds": 1e400}}', "1e400 is out of range for a number"),
        ('{"schema": 1, "n": ' + "9" * 5000 + "}", "not a result record"),
        ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
        ('{"schema": 1, "variant": "\\ud83d"}', "variant: holds a lone surrogate"),
        ("", "not a readable result record"),
    ],
)
def test_hostile_json_is_input_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        results.load(_write(tmp_path, text))


def test_schema_must_be_the_integer_one(tmp_path: Path) -> None:
    for schema in (True, 1.0):
        data = {**_good(), "schema": schema}
        with pytest.raises(InputError, match="is not supported"):
            results.load(_write(tmp_path, json.dumps(data)))


def test_huge_files_are_refused_unread(tmp_path: Path) -> None:
    path = _write(tmp_path, " " * (results.MAX_RECORD_BYTES + 1))
    with pytest.raises(InputError, match="is not a result record"):
        results.load(path)


def test_started_build_and_figures_round_trip(tmp_path: Path) -> None:
    record = (
        _record()
        .with_build(
            BuildOutcome(status=Status.STARTED, seconds=0.0, started_at="2026-11-22T04:00:00+00:00")
        )
        .with_test(
            results.TestOutcome(
                status=Status.PASSED,
                figures=results.Figures(
                    libraries=(results.Library(name="libtorch_cpu.so", bytes=434184800),),
                    import_seconds=0.88,
                    import_runs=5,
                ),
            )
        )
    )
    path = results.result_path(tmp_path, record.variant)
    results.save(record, path)
    assert results.load(path) == record
    assert record.test is not None and record.test.figures is not None
    assert record.test.figures.library_bytes == 434184800
    assert not record.passed  # a build that never finished is not a passed build


@pytest.mark.parametrize(
    ("field", "value"),
    [("test", "passed"), ("build.closure_bytes", "abc"), ("build.seconds", -1)],
)
def test_every_reader_exits_2_naming_file_and_field(
    run_cli: Callable[..., subprocess.CompletedProcess[str]],
    tmp_path: Path,
    repo_root: Path,
    field: str,
    value: object,
) -> None:
    """report, test, publish and release all read through `results.load`."""
    data = _set(_good(), field, value)
    data["variant"] = "pytorch-python313-cpu-avx2"
    folder = tmp_path / "results"
    path = results.result_path(folder, "pytorch-python313-cpu-avx2")
    folder.mkdir()
    path.write_text(json.dumps(data), encoding="utf-8")
    catalog = ("--catalog", str(repo_root / "catalog.yaml"))
    commands = [
        ("report", str(folder)),
        ("test", *catalog, "--branch", "main", "--python", sys.executable, "--results",
         str(folder), "pytorch-python313-cpu-avx2"),
        ("publish", *catalog, "--branch", "main", "--org", "acme", "--results", str(folder),
         "--dry-run", "pytorch-python313-cpu-avx2"),
        ("release", *catalog, "--branch", "main", "--results", str(folder), "--dry-run"),
    ]  # fmt: skip
    env = {"GITHUB_SHA": "0" * 40, "GITHUB_REPOSITORY": "acme/x", "GITHUB_TOKEN": "t"}
    for argv in commands:
        cli = run_cli(*argv, cwd=tmp_path, env=env)
        assert cli.returncode == 2, (argv[0], cli.stdout, cli.stderr)
        assert "Traceback" not in cli.stderr
        assert f"{path}: malformed result record: {field}: " in cli.stderr, (argv[0], cli.stderr)
