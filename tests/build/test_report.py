"""`ci-tools report`: a folder of result records -> Markdown table (golden) and JSON summary."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.build import policy, report, results
from ci_tools.build.results import (
    BuildOutcome,
    Check,
    PublishOutcome,
    PublishStatus,
    ResultRecord,
    Status,
)
from tests import proven
from tests.conftest import GOLDEN

CliRunner = Callable[..., subprocess.CompletedProcess[str]]
EXPECT_OF = proven.repo_expect_of


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


def _ran(variant: str, **failed: str) -> tuple[Check, ...]:
    """The checks `ci-tools test` records for the catalog's variant, all passed but those in
    `failed` (name with dashes as underscores -> detail)."""
    return tuple(
        replace(c, status=Status.FAILED, detail=failed[c.name.replace("-", "_")])
        if c.name.replace("-", "_") in failed
        else c
        for c in proven.ran(proven.repo_expect("main", variant))
    )


PASSED_TEST = results.TestOutcome(
    status=Status.PASSED,
    checks=_ran("pytorch-python313-cuda12_8-sm90-avx512"),
    runner="gpu-sm90-1",
    route=results.Route(scope="gpu"),
    figures=results.Figures(
        libraries=(
            results.Library(name="libtorch_cpu.so", bytes=451_215_360),
            results.Library(name="libtorch_cuda.so", bytes=456_130_560),
        ),
        import_seconds=4.625,
        import_runs=5,
    ),
)
FAILED_TEST = results.TestOutcome(
    status=Status.FAILED,
    checks=_ran(
        "torchvision-python313-cuda12_8-sm90-avx512",
        torch_version="torch.__version__ is 2.9.1, expected 2.8.0",
        arch_list="fat binary",
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
    _record(
        "pytorch-python313-cpu-armv9",
        build=BuildOutcome(status=Status.PASSED, seconds=600.0),
        test=results.TestOutcome(
            status=Status.STATIC,
            checks=proven.static(proven.repo_expect("main", "pytorch-python313-cpu-armv9")),
            route=results.Route(scope="static", reason="no runner's CPU runs armv9"),
        ),
    ),
    _record(
        "pytorch-python313-cuda12_8-sm86-avx2",
        build=BuildOutcome(
            status=Status.STARTED, seconds=0.0, started_at="2026-11-22T04:00:00+00:00"
        ),
    ),
]


def write_folder(root: Path, records: list[ResultRecord]) -> Path:
    """Like actions/download-artifact: one nested folder per uploaded artifact."""
    for record in records:
        results.save(record, results.result_path(root / f"result-{record.variant}", record.variant))
    return root


def test_markdown_golden() -> None:
    assert_golden("report.md", report.markdown(RECORDS, EXPECT_OF))


def test_markdown_names_branches_when_there_are_several() -> None:
    other = ResultRecord(
        variant="pytorch-python313-cpu-avx2",
        package="pytorch",
        branch="cuda-12_9",
        platform="x86_64-linux",
    )
    text = report.markdown([*RECORDS[:1], other], EXPECT_OF)
    assert "Branch cuda-12_9, main" in text
    assert "| `pytorch-python313-cpu-avx2` (cuda-12_9) |" in text


def test_summary_counts_and_rows() -> None:
    data = report.summary(RECORDS, EXPECT_OF)
    assert data["counts"] == {
        "variants": 6,
        "build": {"passed": 3, "failed": 1, "skipped": 1, "started": 1, "none": 0, "missing": 0},
        "test": {"passed": 1, "failed": 1, "skipped": 0, "static": 1, "none": 3},
        "publish": {"published": 1, "failed": 0, "dry-run": 0, "none": 5},
        "publishable": 2,
        "failed": 3,
    }
    assert data["coverage"]["total"] == {"ran": 1, "static": 1, "unproven": 4}
    assert data["coverage"]["sm"]["sm90"] == {"ran": 1, "static": 0, "unproven": 1}
    assert data["coverage"]["isa"]["armv9"] == {"ran": 0, "static": 1, "unproven": 0}
    assert data["missing"] == []
    rows = {r["variant"]: r for r in data["rows"]}
    assert rows["torchvision-python313-cuda12_8-sm90-avx512"]["failed_checks"] == [
        "torch-version",
        "arch-list",
    ]
    assert rows["pytorch-python313-cuda12_8-sm90-avx512"]["closure_bytes"] == 5_905_580_032
    sm90 = rows["pytorch-python313-cuda12_8-sm90-avx512"]
    assert sm90["libraries"] == {
        "libtorch_cpu.so": 451_215_360,
        "libtorch_cuda.so": 456_130_560,
    }
    assert sm90["import_seconds"] == 4.625
    assert (sm90["proof"], sm90["proven"]) == ("ran", "ran on sm90 (gpu-sm90-1)")
    armv9 = rows["pytorch-python313-cpu-armv9"]
    assert (armv9["proof"], armv9["publishable"]) == ("static", True)


def test_planned_variants_without_a_record_count_as_failed() -> None:
    planned = [
        report.Planned(variant="pytorch-python313-cuda12_8-sm90-avx512", branch="main"),
        report.Planned(variant="torchvision-python313-cuda12_8-sm86-avx2", branch="main"),
        report.Planned(variant="pytorch-python313-cpu-armv9"),  # any branch
        report.Planned(variant="pytorch-python313-cpu-avx2", branch="cuda-12_9"),
    ]
    data = report.summary(RECORDS, EXPECT_OF, planned)
    assert data["missing"] == [
        {"variant": "pytorch-python313-cpu-avx2", "branch": "cuda-12_9"},
        {"variant": "torchvision-python313-cuda12_8-sm86-avx2", "branch": "main"},
    ]
    assert data["counts"]["build"]["missing"] == 2
    assert data["counts"]["failed"] == 5 and data["counts"]["variants"] == 8
    text = report.markdown(RECORDS, EXPECT_OF, planned)
    assert (
        "| `torchvision-python313-cuda12_8-sm86-avx2` (main) | — | ❌ missing: planned, no record |"
        in text
    )
    assert "4 failed to build (1 never finished, 2 planned with no record)" in text


def test_parse_planned_matrix_and_lines() -> None:
    matrix = {
        "include": [
            {"branch": "main", "packages": ["pytorch-python313-cpu-avx2", "torchvision-x"]},
            {"branch": "cuda-12_9", "packages": ["pytorch-python313-cpu-avx2"]},
        ]
    }
    assert report.parse_planned(json.dumps(matrix), "m.json") == [
        report.Planned(variant="pytorch-python313-cpu-avx2", branch="main"),
        report.Planned(variant="torchvision-x", branch="main"),
        report.Planned(variant="pytorch-python313-cpu-avx2", branch="cuda-12_9"),
    ]
    assert report.parse_planned("# plan\na-1\n\nb-2  # why\n", "p.txt") == [
        report.Planned(variant="a-1"),
        report.Planned(variant="b-2"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a-1\nrm -rf ~\n", "p.txt:2: 'rm -rf ~' is not a variant name"),
        ('{"include": 3}', 'p.txt: a matrix needs an "include" list of entries'),
        ('{"include": [{"branch": "main"}]}', "p.txt: include[0].packages: must be a list"),
        ('{"include": [{"packages": ["x"]}]}', "p.txt: include[0].branch: must be a branch name"),
        ('{"include": [' * 50_000, "p.txt: not a matrix as `ci-tools matrix` prints it"),
    ],
)
def test_parse_planned_refuses_bad_plans(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        report.parse_planned(text, "p.txt")
    assert str(caught.value).startswith(message)


def test_cli_planned_with_no_records_at_all(run_cli: CliRunner, tmp_path: Path) -> None:
    # Every job was cancelled before writing anything: all planned variants failed.
    planned = tmp_path / "plan.txt"
    planned.write_text("pytorch-python313-cpu-avx2\n", encoding="utf-8")
    cli = run_cli("report", str(tmp_path / "none"), "--planned", str(planned))
    assert cli.returncode == 1, cli.stderr
    assert "1 failed to build (1 planned with no record)" in cli.stdout
    assert "1 variant(s) failed" in cli.stderr
    cli = run_cli("report", str(tmp_path), "--planned", str(tmp_path / "missing.txt"))
    assert cli.returncode == 2 and "--planned" in cli.stderr and "Traceback" not in cli.stderr


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
    # RECORDS holds failures: the table and the summary are written, then exit 1.
    assert report.summary(RECORDS, EXPECT_OF)["counts"]["failed"] > 0
    assert cli.returncode == 1, cli.stderr
    assert cli.stdout == report.markdown(RECORDS, EXPECT_OF)
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(
        json.dumps(report.summary(RECORDS, EXPECT_OF))
    )


def test_cli_malformed_record_is_exit_2_naming_the_field(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:1])
    bad = folder / "bad" / "x.result.json"
    bad.parent.mkdir()
    data = RECORDS[0].to_json()
    data["build"]["seconds"] = float("nan")
    bad.write_text(json.dumps(data), encoding="utf-8")  # json writes NaN
    cli = run_cli("report", str(folder))
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert f"{bad}: not a result record: NaN is not a JSON number" in cli.stderr


@pytest.mark.parametrize(
    ("field", "where"),
    [
        (("build", "closure_bytes"), "build.closure_bytes"),
        (("test", "figures", "libraries", 0, "bytes"), "test.figures.libraries[0].bytes"),
    ],
)
def test_cli_a_byte_count_past_json_range_is_exit_2_not_a_crash(
    run_cli: CliRunner, tmp_path: Path, field: tuple[str | int, ...], where: str
) -> None:
    """Issue 20 item 10: 10**400 bytes raised OverflowError in report and release."""
    folder = tmp_path / "results"
    folder.mkdir()
    data = RECORDS[0].to_json()
    node = data
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = 10**400
    (folder / "x.result.json").write_text(json.dumps(data), encoding="utf-8")
    for argv in (
        ["report", str(folder)],
        ["release", "--branch", "main", "--results", str(folder)],
    ):
        cli = run_cli(*argv, env={"GITHUB_TOKEN": "x" * 20, "GITHUB_REPOSITORY": "a/b"})
        assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr[-2000:]
        assert f"{where}: must be a whole number from 0 to 9007199254740991" in cli.stderr


def test_cli_appends_to_the_step_summary(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:2])
    summary = tmp_path / "step-summary.md"
    summary.write_text("# Earlier step\n", encoding="utf-8")
    cli = run_cli(
        "report", str(folder), "--markdown", str(summary), env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert cli.returncode == report_exit(RECORDS[:2]), cli.stderr
    assert summary.read_text(encoding="utf-8") == "# Earlier step\n" + report.markdown(
        RECORDS[:2], EXPECT_OF
    )
    assert cli.stdout == ""


def test_cli_replaces_any_other_markdown_file(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:1])
    target = tmp_path / "table.md"
    target.write_text("old\n", encoding="utf-8")
    cli = run_cli("report", str(folder), "--markdown", str(target))
    assert cli.returncode == report_exit(RECORDS[:1]), cli.stderr
    assert target.read_text(encoding="utf-8") == report.markdown(RECORDS[:1], EXPECT_OF)


def test_cli_unknown_schema_is_exit_2(run_cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "results", RECORDS[:1])
    bad = folder / "future" / "x.result.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"schema": 3, "variant": "x"}), encoding="utf-8")
    cli = run_cli("report", str(folder))
    assert cli.returncode == 2
    assert f"{bad}: result schema 3 is not supported" in cli.stderr
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


def report_exit(records: list[ResultRecord]) -> int:
    return 1 if report.summary(records, EXPECT_OF)["counts"]["failed"] else 0


def test_cli_exit_0_only_when_nothing_failed(run_cli: CliRunner, tmp_path: Path) -> None:
    passed = [r for r in RECORDS if policy.publishable(r, EXPECT_OF(r))]
    assert passed and report.summary(passed, EXPECT_OF)["counts"]["failed"] == 0
    cli = run_cli("report", str(write_folder(tmp_path / "ok", passed)))
    assert cli.returncode == 0, cli.stderr
    failing = [r for r in RECORDS if not policy.publishable(r, EXPECT_OF(r))]
    cli = run_cli("report", str(write_folder(tmp_path / "bad", failing)))
    assert cli.returncode == 1 and "failed" in cli.stderr


def test_help_says_report_exits_1_on_failure(run_cli: CliRunner) -> None:
    assert "exit 1 when any variant failed" in " ".join(run_cli("report", "--help").stdout.split())
