"""What the issue-20 classes (paths, sizes, concurrency) share: running ci-tools as a process
with a time bound and a memory reading, and the table each class prints at the end."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import harness

# Runs ci-tools in this interpreter's process and, whatever happens, writes its peak resident
# memory (KiB) to the file named first: the memory of ci-tools alone, not of its children.
# VmHWM is the high-water mark of this process image's own memory; ru_maxrss would also hold
# what the test process had when it forked this one (Linux keeps it across execve), which made
# a loaded test worker's size look like ci-tools' peak.
_MEASURED = """\
import resource, sys
from pathlib import Path
from ci_tools import cli

def peak_kib():
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

try:
    code = cli.main(sys.argv[2:])
finally:
    Path(sys.argv[1]).write_text(str(peak_kib()))
sys.exit(code)
"""


@dataclass(frozen=True, kw_only=True)
class Measured:
    run: harness.Run
    seconds: float
    peak_kib: int  # 0 when the process died before it could say
    timed_out: bool


def run_measured(
    argv: Sequence[str],
    cwd: Path,
    scratch: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> Measured:
    """`ci-tools ARGV` as its own process, killed after `timeout` (a hang is a failure, not a
    wait): its exit, output, wall time and peak memory."""
    peak = scratch / f"peak-{time.monotonic_ns()}"
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(harness.REPO_ROOT),
        "HOME": str(scratch),
        "XDG_STATE_HOME": str(scratch / "state"),
        "LANG": "C.UTF-8",
        **(env or {}),
    }
    started = time.monotonic()
    timed_out = False
    try:
        done = subprocess.run(
            [sys.executable, "-c", _MEASURED, str(peak), *argv],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            errors="backslashreplace",
            timeout=timeout,
            check=False,
        )
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        timed_out = True
        code, stdout, stderr = -9, _text(exc.stdout), _text(exc.stderr)
    seconds = time.monotonic() - started
    crash = stderr if "Traceback (most recent call last)" in stderr else None
    kib = int(peak.read_text()) if peak.exists() else 0
    run = harness.Run(argv=tuple(argv), code=code, stdout=stdout, stderr=stderr, crash=crash)
    return Measured(run=run, seconds=seconds, peak_kib=kib, timed_out=timed_out)


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "backslashreplace")
    return data or ""


@dataclass
class Table:
    """Rows by case kind: how many, exit codes, the slowest run, the most memory; and the
    invariants held (by name, how many times)."""

    title: str
    rows: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    slowest: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    peak_mib: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    held: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, code: int, seconds: float = 0.0, peak_kib: int = 0) -> None:
        self.rows[kind]["cases"] += 1
        self.rows[kind][f"exit {code}"] += 1
        self.slowest[kind] = max(self.slowest[kind], seconds)
        self.peak_mib[kind] = max(self.peak_mib[kind], peak_kib / 1024)

    def render(self) -> str:
        codes = sorted({k for row in self.rows.values() for k in row if k != "cases"})
        head = ["case", "cases", *codes, "slowest s", "peak MiB"]
        lines = [f"{self.title}", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for kind in sorted(self.rows):
            row = self.rows[kind]
            cells = [kind, str(row["cases"]), *(str(row[c]) for c in codes)]
            cells += [f"{self.slowest[kind]:.1f}", f"{self.peak_mib[kind]:.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
        held = ", ".join(f"{name} x{count}" for name, count in sorted(self.held.items()))
        lines.append(f"invariants held: {held}")
        return "\n".join(lines)
