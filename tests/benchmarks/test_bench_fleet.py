"""benchmarks/bench_fleet.py: the stacks and routes come from the real plan, and the goal lines
end as bench_matrix.py's do. No figure is asserted: the simulation's own tests do that."""

from __future__ import annotations

import re

import pytest

from benchmarks import bench_fleet
from benchmarks.bench_fleet import REPO
from benchmarks.fleet_sim import HOUR, MINUTE, Stack


def test_the_shipped_inventory_builds_its_gpu_tested_stacks_on_the_gpu_host() -> None:
    # runners.yaml names no cache: what the gpu-sm90 host tests, it builds (issue 28: 10 of
    # main's 45 stacks, the sm90 and avx512bf16 ones).
    planned = bench_fleet.plan("main", REPO / "runners.yaml", cache=False)
    stacks = bench_fleet.stacks(planned, {})
    on_gpu = [s for s in stacks if "gpu-sm90" in s.build_on]
    assert len(stacks) == 45
    assert len(on_gpu) == 10
    assert all(s.test_on == s.build_on for s in on_gpu)
    assert {s.name for s in stacks if s.gpu_result} == {
        f"py313-sm90-{isa}" for isa in ("avx2", "avx512", "avx512bf16", "avx512vnni")
    }


def test_with_a_cache_the_pools_build_everything() -> None:
    planned = bench_fleet.plan("main", REPO / "runners.yaml", cache=True)
    stacks = bench_fleet.stacks(planned, {})
    assert not [s for s in stacks if "gpu-sm90" in s.build_on]
    assert len([s for s in stacks if "gpu-sm90" in s.test_on]) == 10


def test_durations_default_or_from_records() -> None:
    planned = bench_fleet.plan("main", REPO / "runners.yaml", cache=False)
    entry = next(e for e in planned.entries if e.name == "py313-sm90-avx2")
    cpu = next(e for e in planned.entries if e.name == "py313-cpu-avx2")
    first, second = entry.packages
    recorded = {first: 3000.0, second: 600.0, cpu.packages[0]: 10.0}
    by_name = {s.name: s for s in bench_fleet.stacks(planned, recorded)}
    assert by_name["py313-sm90-avx2"].build_s == 3600.0
    assert by_name["py313-sm90-avx2"].test_s == 2 * 5 * MINUTE  # two variants
    # A stack with a variant lacking a record takes the default (here: a CPU stack's hour).
    assert by_name["py313-cpu-avx2"].build_s == 1 * HOUR
    assert by_name["py313-sm80-avx2"].build_s == 2 * HOUR


def test_gpu_first_order() -> None:
    def stack(name: str, build: float, gpu: bool) -> Stack:
        return Stack(name=name, build_on=(), test_on=(), build_s=build, test_s=0, gpu_result=gpu)

    stacks = [stack("a", 1, False), stack("b", 2, False), stack("c", 1, True), stack("d", 2, False)]
    assert [s.name for s in bench_fleet.ordered(stacks, "plan")] == ["a", "b", "c", "d"]
    assert [s.name for s in bench_fleet.ordered(stacks, "gpu-first")] == ["c", "b", "d", "a"]


def test_the_goal_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_fleet.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    goals = [line for line in lines if "goal" in line]
    assert len(goals) == 2
    for hosts, line in zip((1, 4), goals, strict=True):
        assert f"main, {hosts} per pool + 1 GPU host, new shape: push-to-green" in line
        assert re.search(r"\(goal <= 1\.10x: (met|MISSED)\)$", line)


def test_bad_host_counts_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_fleet.main(["--hosts", "0"]) == 2
    assert "--hosts 0" in capsys.readouterr().err
