"""Time limits for the suite's long child processes (act runs, Nix builds, whole ci-tools
runs), so that no assertion depends on how fast or how busy the machine is.

A limit is what the child needs on two idle cores times a margin far above it, scaled up by
the machine's load when the child starts (a loaded machine of 2 cores with 2 busy loops and
2 test workers beside the child runs it 3 to 4 times slower; measured in issue 27). A limit
that trips fails the test with `TimeLimitExceeded`'s message: what ran past which limit and
under what load, never an unrelated assertion on a half-done run.

CI_TOOLS_TEST_TIME_FACTOR multiplies every limit (a slower machine than the suite's 2 cores).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Any

# A child that has not ended within MARGIN times its idle need is hung, not slow.
MARGIN = 5.0
# Load above this many times the cores is not expected to slow a child further: a bound, so a
# transient spike cannot make a hung child's limit hours long.
MOST_LOAD = 4.0


def load_factor() -> float:
    """How many times slower than idle a child started now may run: the 1-minute load per
    core, at least 1 and at most MOST_LOAD."""
    cores = os.cpu_count() or 1
    try:
        one_minute = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return MOST_LOAD
    return min(MOST_LOAD, max(1.0, one_minute / cores))


def limit(idle_seconds: float) -> float:
    """The limit for a child that needs IDLE_SECONDS on two idle cores."""
    factor = float(os.environ.get("CI_TOOLS_TEST_TIME_FACTOR") or "1")
    return idle_seconds * MARGIN * load_factor() * factor


class TimeLimitExceeded(AssertionError):
    """A child ran past its limit: the message says which, for how long and under what load."""


def run(
    argv: Sequence[str], idle_seconds: float, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """subprocess.run(ARGV, text=True, **KWARGS) with `limit(IDLE_SECONDS)`; a limit that
    trips fails the test naming the command, the limit, the load and the output's last lines."""
    seconds = limit(idle_seconds)
    try:
        return subprocess.run(list(argv), text=True, timeout=seconds, check=False, **kwargs)
    except subprocess.TimeoutExpired as expired:
        raise TimeLimitExceeded(describe(argv, seconds, expired)) from None


def describe(argv: Sequence[str], seconds: float, expired: subprocess.TimeoutExpired) -> str:
    tail = _text(expired.stdout) + _text(expired.stderr)
    load = ", ".join(f"{x:.1f}" for x in _loads())
    return (
        f"time limit: `{' '.join(argv[:3])} …` ran past its limit of {seconds:.0f} s "
        f"(load now {load} on {os.cpu_count()} cores); this is the limit tripping, not the "
        f"assertion under test. Last output:\n{tail[-3000:]}"
    )


def _loads() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
