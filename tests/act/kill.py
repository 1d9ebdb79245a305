"""Kill a running step of an act run as a runner that loses its job does: every process of the
step, at once, with SIGKILL (act limit 4: act cannot cancel a run, so the scenario that needs
a run killed mid-way does it from outside).

The step to kill is the one whose process tree holds the process that wrote `pid_file` (the
flox hook's ACT_HOOK_BLOCKED, written by a `flox build` that then blocks): its tree is rooted
at the step's shell, the ancestor that act (host mode) started. A thread beside the act run
waits, polling once a second (no busy loop), until that file exists and `ready()` holds
(another stack's green was uploaded), then kills. Processes are read from /proc (Linux).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")


def parent_of(pid: int) -> int:
    """The parent pid from /proc/PID/stat (after the command name, which may hold spaces)."""
    stat = (PROC / str(pid) / "stat").read_text(encoding="utf-8")
    return int(stat.rpartition(")")[2].split()[1])


def command_of(pid: int) -> str:
    return (PROC / str(pid) / "comm").read_text(encoding="utf-8").strip()


def step_root(pid: int, runner: str = "act") -> int:
    """The ancestor of PID (or PID) whose parent is the `runner` process: the step's shell."""
    current = pid
    while current > 1:
        parent = parent_of(current)
        if command_of(parent) == runner:
            return current
        current = parent
    raise LookupError(f"process {pid} has no ancestor started by {runner!r}")


def tree(root: int) -> list[int]:
    """ROOT and every process below it, parents first."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(parent_of(int(entry.name)), []).append(int(entry.name))
            except (OSError, ValueError):
                continue  # ended while the table was read
    found = [root]
    for pid in found:
        found.extend(children.get(pid, []))
    return found


@dataclass
class Kill:
    """What the thread did: the processes it killed (pid, command), or why it killed none."""

    killed: list[tuple[int, str]] = field(default_factory=list)
    error: str = ""


def kill_step_of(pid: int, runner: str = "act") -> list[tuple[int, str]]:
    """SIGKILL to every process of the step holding PID, as a runner losing the job sends."""
    pids = tree(step_root(pid, runner))
    named = [(p, command_of(p)) for p in pids]
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            continue
    return named


def _watch(pid_file: Path, ready: Callable[[], bool], done: threading.Event, kill: Kill) -> None:
    while not done.wait(1.0):
        if pid_file.exists() and ready():
            try:
                kill.killed = kill_step_of(int(pid_file.read_text(encoding="utf-8")))
            except (OSError, ValueError, LookupError) as error:
                kill.error = f"could not kill the blocked step: {error}"
            return
    kill.error = f"the run ended before the kill ({pid_file} written: {pid_file.exists()})"


@contextmanager
def killing(pid_file: Path, ready: Callable[[], bool]) -> Iterator[Kill]:
    """Within the block (the act run), kill the step that wrote PID_FILE once READY() holds."""
    kill = Kill()
    done = threading.Event()
    thread = threading.Thread(target=_watch, args=(pid_file, ready, done, kill), daemon=True)
    thread.start()
    try:
        yield kill
    finally:
        done.set()
        thread.join()
        if not kill.killed and pid_file.exists():
            # No kill (the run failed or timed out first): end the blocked hook, which would
            # otherwise outlive the scenario until its own bound.
            with suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text(encoding="utf-8")), signal.SIGKILL)
