"""Result records as files: the round trip, the one loader's refusals, every reader's exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Status
from tests.build.results.samples import sample_json, sample_record, set_field, write_record


def test_round_trip(tmp_path: Path) -> None:
    path = results.result_path(tmp_path, "pytorch-python313-cpu-avx2")
    assert path.name == "pytorch-python313-cpu-avx2.result.json"
    results.save(sample_record(), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert next(iter(data)) == "schema" and data["schema"] == 2
    assert data["test"]["checks"] == [
        {"name": "torch-version", "status": "failed", "detail": "2.13.0 vs 2.8.0"}
    ]
    assert results.load(path) == sample_record()


def test_malformed_record_is_input_error(tmp_path: Path) -> None:
    path = tmp_path / "x.result.json"
    path.write_text(json.dumps({"schema": 1, "variant": "x"}), encoding="utf-8")
    with pytest.raises(InputError, match="malformed result record"):
        results.load(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not a readable result record"):
        results.load(path)


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
        results.load(write_record(tmp_path, text))


def test_huge_files_are_refused_unread(tmp_path: Path) -> None:
    path = write_record(tmp_path, " " * (results.MAX_RECORD_BYTES + 1))
    with pytest.raises(InputError, match=f"larger than {results.MAX_RECORD_BYTES} bytes"):
        results.load(path)


def test_started_build_and_figures_round_trip(tmp_path: Path) -> None:
    record = (
        sample_record()
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
    assert not record.built  # a build that never finished is not a passed build


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
    data = set_field(sample_json(), field, value)
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


def test_a_record_saved_under_another_variants_name_is_refused(tmp_path: Path) -> None:
    # Issue 20 item 7: A's passing record copied to B.result.json proves nothing about B.
    other = results.result_path(tmp_path, "pytorch-python313-cpu-avx512")
    results.save(sample_record(), other)
    with pytest.raises(InputError, match="holds the record of pytorch-python313-cpu-avx2, not"):
        results.load(other)


def test_a_schema_1_record_stays_readable(tmp_path: Path) -> None:
    path = results.result_path(tmp_path, "pytorch-python313-cpu-avx2")
    results.save(sample_record(), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "schema": 1}), encoding="utf-8")
    assert results.load(path).variant == "pytorch-python313-cpu-avx2"


@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_a_record_that_is_no_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """Issue 20 item 2: a *.result.json symlinked to /dev/zero was read until memory ran out."""
    path = tmp_path / "x.result.json"
    if kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        results.load(path)
