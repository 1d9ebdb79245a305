"""`ci-tools report`: a folder of result records -> Markdown table (golden) and JSON summary."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools import report, results
from ci_tools.results import (
    BuildOutcome,
    Check,
    PublishOutcome,
    PublishStatus,
    ResultRecord,
    Status,
)

CliRunner = Callable[..., subprocess.CompletedProcess[str]]
GOLDEN = Path(__file__).parent / "golden"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} differs; UPDATE_GOLDEN=1 rewrites it"


def _record(variant: str, **outcomes: object) -> ResultRecord:
    return ResultRecord(
        variant=variant,
        package=variant.split("-", 1)[0],
        branch="main",
        platform="aarch64-linux" if "armv9" in variant else "x86_64-linux",
        commit="0123456789abcdef0123456789abcdef01234567",
        runner="runner-1",
        **outcomes,  # type: ignore[arg-type]
    )


PASSED_TEST = results.TestOutcome(
    status=Status.PASSED,
    checks=(
        Check(name="import-torch", status=Status.PASSED),
        Check(name="gpu-mlp", status=Status.SKIPPED),
    ),
)
FAILED_TEST = results.TestOutcome(
    status=Status.FAILED,
    checks=(
        Check(
            name="torch-version",
            status=Status.FAILED,
            detail="torch.__version__ is 2.9.1, expected 2.8.0",
        ),
        Check(name="arch-list", status=Status.FAILED, detail="fat binary"),
        Check(name="cpu-mlp", status=Status.PASSED),
    ),
)

RECORDS = [
    _record(
        "pytorch-python313-cuda12_8-sm90-avx512",
        build=BuildOutcome(
            status=Status.PASSED,
            seconds=7380.0,
            store_path="/nix/store/a-torch",
            closure_bytes=5_905_580_032,
        ),
        test=PASSED_TEST,
        publish=PublishOutcome(status=PublishStatus.PUBLISHED, org="acme"),
    ),
    _record(
        "torchvision-python313-cuda12_8-sm90-avx512",
        build=BuildOutcome(
            status=Status.PASSED, seconds=912.4, closure_bytes=346_030_080, attempts=2
        ),
        test=FAILED_TEST,
    ),
    _record(
        "pytorch-python313-cuda12_8-sm80-avx2",
        build=BuildOutcome(status=Status.FAILED, seconds=1830.0, log_tail="ninja: build stopped"),
    ),
    _record(
        "torchvision-python313-cuda12_8-sm80-avx2",
        build=BuildOutcome(status=Status.SKIPPED, seconds=0.0, log_tail="not built"),
    ),
    _record("pytorch-python313-cpu-armv9", test=PASSED_TEST),
]


def write_folder(root: Path, records: list[ResultRecord]) -> Path:
    """Like actions/download-artifact: one nested folder per uploaded artifact."""
    for record in records:
        results.save(record, results.result_path(root / f"result-{record.variant}", record.variant))
    return root


def test_markdown_golden() -> None:
    assert_golden("report.md", report.markdown(RECORDS))


def test_markdown_names_branches_when_there_are_several() -> None:
    other = ResultRecord(
        variant="pytorch-python313-cpu-avx2",
        package="pytorch",
        branch="cuda-12_9",
        platform="x86_64-linux",
    )
    text = report.markdown([*RECORDS[:1], other])
    assert "Branch cuda-12_9, main" in text
    assert "| `pytorch-python313-cpu-avx2` (cuda-12_9) |" in text


def test_summary_counts_and_rows() -> None:
    data = report.summary(RECORDS)
    assert data["counts"] == {
        "variants": 5,
        "build": {"passed": 2, "failed": 1, "skipped": 1, "none": 1},
        "test": {"passed": 2, "failed": 1, "skipped": 0, "none": 2},
        "publish": {"published": 1, "failed": 0, "dry-run": 0, "none": 4},
        "passed": 1,
    }
    rows = {r["variant"]: r for r in data["rows"]}
    assert rows["torchvision-python313-cuda12_8-sm90-avx512"]["failed_checks"] == [
        "torch-version",
        "arch-list",
    ]
    assert rows["pytorch-python313-cuda12_8-sm90-avx512"]["closure_bytes"] == 5_905_580_032
    assert rows["pytorch-python313-cpu-armv9"]["build"] is None


@pytest.mark.parametrize(
    ("size", "text"),
    [(5_905_580_032, "5.50 GiB"), (346_030_080, "330.0 MiB"), (1 << 30, "1.00 GiB")],
)
def test_format_bytes(size: int, text: str) -> None:
    assert report.format_bytes(size) == text


def test_cli_reads_nested_folders(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS)
    out = tmp_path / "summary.json"
    cli = run_cli("report", str(folder), "--json", str(out))
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == report.markdown(RECORDS)
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(
        json.dumps(report.summary(RECORDS))
    )


def test_cli_appends_to_the_step_summary(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:2])
    summary = tmp_path / "step-summary.md"
    summary.write_text("# Earlier step\n", encoding="utf-8")
    cli = run_cli(
        "report", str(folder), "--markdown", str(summary), env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert cli.returncode == 0, cli.stderr
    assert summary.read_text(encoding="utf-8") == "# Earlier step\n" + report.markdown(RECORDS[:2])
    assert cli.stdout == ""


def test_cli_replaces_any_other_markdown_file(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:1])
    target = tmp_path / "table.md"
    target.write_text("old\n", encoding="utf-8")
    assert run_cli("report", str(folder), "--markdown", str(target)).returncode == 0
    assert target.read_text(encoding="utf-8") == report.markdown(RECORDS[:1])


def test_cli_unknown_schema_is_exit_2(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:1])
    bad = folder / "future" / "x.result.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"schema": 2, "variant": "x"}), encoding="utf-8")
    cli = run_cli("report", str(folder))
    assert cli.returncode == 2
    assert f"{bad}: result schema 2 is not supported" in cli.stderr
    assert "Traceback" not in cli.stderr


def test_cli_refuses_two_records_of_one_variant(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:1])
    results.save(RECORDS[0], results.result_path(folder / "rerun", RECORDS[0].variant))
    cli = run_cli("report", str(folder))
    assert cli.returncode == 2 and "a second record of" in cli.stderr


def test_cli_empty_or_missing_folder_is_exit_2(run_cli: CliRunner, tmp_path: Path) -> None:
    assert "holds no result records" in run_cli("report", str(tmp_path)).stderr
    cli = run_cli("report", str(tmp_path / "missing"))
    assert cli.returncode == 2 and "no such results folder" in cli.stderr
