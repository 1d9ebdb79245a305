"""tests/act/kill.py on a process tree of its own: no act run needed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.act import kill

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def children_of(pid: int, count: int) -> list[int]:
    """The processes below PID once there are COUNT of them (bash starts them at once)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        below = kill.tree(pid)[1:]
        if len(below) >= count:
            return below
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never had {count} children")


def gone(pid: int) -> bool:
    """Ended: no such process, or a zombie its new parent has not reaped yet."""
    try:
        stat = (kill.PROC / str(pid) / "stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] in {"Z", "X"}


def test_the_whole_step_of_a_process_is_killed_and_nothing_else() -> None:
    step = subprocess.Popen(["bash", "-c", "sleep 300 & sleep 300 & wait"])
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        first, second = children_of(step.pid, 2)
        # This test process stands for act: the step is its child, bash.
        killed = kill.kill_step_of(first, runner=kill.command_of(os.getpid()))
        assert [pid for pid, _ in killed] == [step.pid, first, second]
        assert [command for _, command in killed] == ["bash", "sleep", "sleep"]
        assert step.wait(timeout=60) == -9
        deadline = time.monotonic() + 60
        while not (gone(first) and gone(second)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(first) and gone(second)
        assert bystander.poll() is None
    finally:
        for process in (step, bystander):
            process.kill()
            process.wait()


def test_a_process_no_runner_started_is_refused() -> None:
    with pytest.raises(LookupError, match="no ancestor started by 'no-such-runner'"):
        kill.step_root(os.getpid(), runner="no-such-runner")
