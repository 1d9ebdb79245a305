"""benchmarks/bench_inputs.py: hostile YAML parse times and child-output memory, with goals."""

from __future__ import annotations

import pytest

from benchmarks import bench_inputs


def test_the_benchmark_runs_and_meets_its_goals(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_inputs.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "holds more than 20000 values" in out
    assert "goal: under 64 MiB each: met" in out
