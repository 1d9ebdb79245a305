"""benchmarks/fleet_sim.py: a tiny fleet whose schedules are worked out by hand.

Two hosts: `pool` (label pool) and `gpu` (label gpu, a test runner). Stack A builds on the
pool for 100 s and is tested on the GPU host for 10 s; stack B builds (50 s) and is tested
(10 s) on the pool. A mark-green takes 1 s on GitHub's hosted runners."""

from __future__ import annotations

import pytest

from benchmarks import fleet_sim
from benchmarks.fleet_sim import Host, Job, Shape, Stack

POOL = Host(name="pool", labels=frozenset({"self-hosted", "pool"}))
GPU = Host(name="gpu", labels=frozenset({"self-hosted", "gpu"}), gpu=True)
HOSTS = (POOL, GPU)
A = Stack(name="A", build_on=("pool",), test_on=("gpu",), build_s=100, test_s=10, gpu_result=True)
B = Stack(name="B", build_on=("pool",), test_on=("pool",), build_s=50, test_s=10, gpu_result=False)


def _times(shape: Shape) -> dict[str, tuple[str | None, float, float]]:
    return {r.job.key: (r.host, r.start, r.end) for r in fleet_sim.simulate(shape, HOSTS)}


def test_new_shape_tests_a_stack_when_its_own_build_ends() -> None:
    # A's build 0-100 on the pool, then B's 100-150; A's test starts at 100 on the idle
    # GPU host, B's at 150 on the pool; each green 1 s after its test.
    got = _times(fleet_sim.new_shape([A, B], green_s=1))
    assert got["build/A"] == ("pool", 0, 100)
    assert got["test/A"] == ("gpu", 100, 110)
    assert got["build/B"] == ("pool", 100, 150)
    assert got["test/B"] == ("pool", 150, 160)
    assert got["green/A"] == (None, 110, 111)
    assert got["green/B"] == (None, 160, 161)


def test_old_shape_tests_only_after_every_build_of_the_shard() -> None:
    got = _times(fleet_sim.old_shape([[A, B]], green_s=1))
    assert got["0/test/A"] == ("gpu", 150, 160)
    assert got["0/test/B"] == ("pool", 150, 160)
    assert got["0/mark-green"] == (None, 160, 161)


def test_figures_of_both_shapes() -> None:
    new = fleet_sim.simulate(fleet_sim.new_shape([A, B], green_s=1), HOSTS)
    old = fleet_sim.simulate(fleet_sim.old_shape([[A, B]], green_s=1), HOSTS)
    got_new, got_old = fleet_sim.figures(new, HOSTS), fleet_sim.figures(old, HOSTS)
    # New: each green recorded when its test ends, then the run's `greens` job (1 s) publishes
    # them all at 162; old: the shard's mark-green at 161.
    assert (got_new.push_to_green, got_new.first_gpu) == (162, 110)
    assert (got_old.push_to_green, got_old.first_gpu) == (161, 160)
    # The GPU host works 10 s of the 162.
    assert got_new.gpu_idle == pytest.approx(1 - 10 / 162)
    # New: one check run for the run's greens; old: a status per stack, both from one job.
    assert (got_new.writes, got_new.peak_hour, got_new.peak_minute) == (1, 1, 1)
    assert (got_old.writes, got_old.peak_hour, got_old.peak_minute) == (2, 2, 2)


def test_fifo_serves_the_job_queued_first_not_the_one_listed_first() -> None:
    # B first: B's test (listed second) is queued at 50, A's build (listed fourth) at 0:
    # the pool, free at 50, runs A's build; B's test waits until 150.
    got = _times(fleet_sim.new_shape([B, A], green_s=1))
    assert got["build/B"] == ("pool", 0, 50)
    assert got["build/A"] == ("pool", 50, 150)
    assert got["test/B"] == ("pool", 150, 160)


def test_bounds() -> None:
    bounds = fleet_sim.bounds([A, B], HOSTS, green_s=1)
    assert bounds.critical_path == 111  # A: 100 + 10 + 1
    # The pool's work: A's build, B's build and test; then a green.
    assert (bounds.load, bounds.busiest_group, bounds.push_to_green) == (160, "pool", 161)
    assert bounds.first_gpu == 110
    assert bounds.gpu_idle == pytest.approx(1 - 10 / 161)
    assert bounds.peak_hour == 2


def test_work_spreads_over_a_group_of_hosts() -> None:
    hosts = (POOL, Host(name="pool-2", labels=POOL.labels), GPU)
    bounds = fleet_sim.bounds([A, B], hosts, green_s=1)
    assert (bounds.load, bounds.push_to_green) == (80, 111)  # the critical path now
    got = fleet_sim.figures(fleet_sim.simulate(fleet_sim.new_shape([A, B], 1), hosts), hosts)
    assert got.push_to_green == 112  # both builds at once; A's chain, then the greens job


def test_merged_legs_give_the_first_gpu_result_early() -> None:
    # Two stacks built and tested on the GPU host (no cache). Apart, C's test is queued at
    # 100, behind D's build queued at 0; merged, C's job builds and tests at once.
    c = Stack(
        name="C", build_on=("gpu",), test_on=("gpu",), build_s=100, test_s=10, gpu_result=True
    )
    d = Stack(
        name="D", build_on=("gpu",), test_on=("gpu",), build_s=100, test_s=10, gpu_result=False
    )
    apart = fleet_sim.simulate(fleet_sim.new_shape([c, d], 1), HOSTS)
    merged = fleet_sim.simulate(fleet_sim.new_shape([c, d], 1, merge_same_runner=True), HOSTS)
    assert fleet_sim.figures(apart, HOSTS).first_gpu == 210
    assert fleet_sim.figures(merged, HOSTS).first_gpu == 110
    assert fleet_sim.figures(merged, HOSTS).push_to_green == 222  # and the greens job


def test_a_job_no_host_serves_is_refused() -> None:
    lost = Shape(name="x", jobs=(Job(key="j", labels=frozenset({"tpu"}), seconds=1),))
    with pytest.raises(ValueError, match="no host has every label of j"):
        fleet_sim.simulate(lost, HOSTS)


@pytest.mark.parametrize(
    ("writes", "window", "want"),
    [
        ([(0, 2), (3599, 3)], 3600, 5),
        ([(0, 2), (3600, 3)], 3600, 3),
        ([(0, 1), (30, 1), (3700, 5)], 3600, 5),
        ([], 60, 0),
    ],
)
def test_peak(writes: list[tuple[float, int]], window: float, want: int) -> None:
    assert fleet_sim.peak(writes, window) == want
