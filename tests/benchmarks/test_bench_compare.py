"""benchmarks/bench_compare.py: two result records -> figures and their ratios."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks import bench_compare
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Figures, Library, ResultRecord, Status
from tests.conftest import DATA

CliRunner = Callable[..., subprocess.CompletedProcess[str]]
# Records `benchmarks/device_smoke.sh` wrote on the GPU machine (PyPI torch 2.11.0+cu130, H100).
DEVICE = DATA / "device-h100"


def _record(variant: str, closure: int, libs: dict[str, int], seconds: float) -> ResultRecord:
    return ResultRecord(
        variant=variant,
        package="pytorch",
        branch="cuda-13_0",
        platform="x86_64-linux",
        build=BuildOutcome(status=Status.PASSED, seconds=3600.0, closure_bytes=closure),
        test=results.TestOutcome(
            status=Status.PASSED,
            figures=Figures(
                libraries=tuple(Library(name=n, bytes=b) for n, b in libs.items()),
                import_seconds=seconds,
                import_runs=5,
            ),
        ),
    )


def _row(text: str, figure: str) -> list[str]:
    [line] = [line for line in text.splitlines() if line.startswith(figure + " ")]
    return line.removeprefix(figure).split()


def test_ratios_of_a_targeted_build_against_a_fat_one() -> None:
    targeted = _record("sm90", 2 << 30, {"libtorch_cuda.so": 150 << 20}, 1.5)
    fat = _record("fat", 6 << 30, {"libtorch_cuda.so": 600 << 20}, 4.5)
    rows = {r.figure: r for r in bench_compare.compare(targeted, fat)}
    assert rows["closure"].ratio == 2 / 6
    assert rows["libtorch_cuda.so"].ratio == 0.25
    assert rows["import torch"].ratio == 1.5 / 4.5
    assert rows["build time"].ratio == 1.0
    text = bench_compare.table(targeted, fat)
    assert _row(text, "libtorch_cuda.so") == ["150.0", "MiB", "600.0", "MiB", "0.250", "-75.0%"]


def test_a_figure_only_one_record_holds_has_no_ratio() -> None:
    a = _record("a", 1, {"libtorch_cpu.so": 10}, 1.0)
    b = ResultRecord(variant="b", package="pytorch", branch="main", platform="x86_64-linux")
    rows = {r.figure: r for r in bench_compare.compare(a, b)}
    assert rows["libtorch_cpu.so"].ratio is None and rows["libtorch_cpu.so"].b is None


def test_cli_on_the_device_records(run_cli: CliRunner, repo_root: Path) -> None:
    gpu = DEVICE / "pytorch-python313-cuda13_0-sm90-avx512.result.json"
    cpu = DEVICE / "pytorch-python313-cpu-avx512bf16.result.json"
    cli = subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_compare.py"), str(gpu), str(cpu)],
        capture_output=True, text=True, check=False, env={"PYTHONPATH": str(repo_root)},
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    # The same wheel measured twice: its libraries are the same files.
    assert _row(cli.stdout, "libtorch_cuda.so") == [
        "435.0",
        "MiB",
        "435.0",
        "MiB",
        "1.000",
        "+0.0%",
    ]
    record = results.load(gpu)
    assert record.test is not None and record.test.figures is not None
    assert {c.name: c.status for c in record.test.checks}["sass"] is Status.FAILED


def test_cli_malformed_record_is_exit_2(tmp_path: Path, repo_root: Path) -> None:
    bad = tmp_path / "bad.result.json"
    bad.write_text(json.dumps({"schema": 1, "test": "passed"}), encoding="utf-8")
    cli = subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_compare.py"), str(bad), str(bad)],
        capture_output=True, text=True, check=False, env={"PYTHONPATH": str(repo_root)},
    )  # fmt: skip
    assert cli.returncode == 2
    assert f"{bad}: malformed result record: " in cli.stderr and "Traceback" not in cli.stderr
