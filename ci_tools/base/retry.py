"""The one retry mechanism of build, publish and release: tenacity, bounded, injectable sleep.

Each caller says what is transient; this module says how long to keep trying. A caller may
also name a delay the server asked for (Retry-After), which replaces the backoff for that wait.
`Deadline` and `within` bound a whole loop of calls in wall time, hung sockets included.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from tenacity import RetryCallState

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """Exponential backoff with jitter, stopped by attempts or total time, whichever first."""

    attempts: int = 5
    total_seconds: float = 600.0
    initial_seconds: float = 2.0
    max_seconds: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)


def call(
    policy: RetryPolicy,
    action: Callable[[], T],
    *,
    transient: Callable[[BaseException], bool],
    server_delay: Callable[[BaseException], float | None] = lambda _exc: None,
    on_retry: Callable[[int, BaseException, float], None] = lambda _n, _exc, _delay: None,
) -> T:
    """Run `action`; on an exception `transient` accepts, wait and run it again.

    A permanent exception, or the last transient one, propagates unchanged.
    """
    from tenacity import Retrying, retry_if_exception, wait_exponential, wait_random

    # wait_exponential_jitter's arguments changed name across tenacity releases: compose.
    backoff = wait_exponential(
        multiplier=policy.initial_seconds, max=policy.max_seconds
    ) + wait_random(0, policy.initial_seconds)

    def asked(state: RetryCallState) -> float | None:
        exc = state.outcome.exception() if state.outcome is not None else None
        return server_delay(exc) if exc is not None else None

    started = policy.clock()

    def left(_state: RetryCallState) -> float:
        return policy.total_seconds - (policy.clock() - started)

    def stop(state: RetryCallState) -> bool:
        # A server that asks for a longer wait than the budget has left ends it now,
        # rather than after a sleep that cannot be followed by a try.
        wanted = asked(state)
        return (
            state.attempt_number >= policy.attempts
            or left(state) <= 0
            or (wanted is not None and wanted > left(state))
        )

    def wait(state: RetryCallState) -> float:
        wanted = asked(state)
        delay = backoff(state) if wanted is None else max(0.0, wanted)
        return max(0.0, min(delay, left(state)))

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        if exc is not None:
            on_retry(state.attempt_number, exc, delay)

    retrying = Retrying(
        stop=stop,
        wait=wait,
        retry=retry_if_exception(transient),
        sleep=policy.sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(action)


# --- one overall budget for a loop of calls ---------------------------------------------------


class DeadlinePassed(Exception):
    """The overall budget ran out before the call returned."""


@dataclass(frozen=True)
class Deadline:
    """The end of an overall budget shared by every call of one loop: retries, pages and
    requests together, however each of them fails or hangs."""

    seconds: float
    end: float
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    @classmethod
    def after(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> Deadline:
        return cls(seconds=seconds, end=clock() + seconds, clock=clock)

    def left(self) -> float:
        return self.end - self.clock()


def within(deadline: Deadline, action: Callable[[], T]) -> T:
    """`action`, or DeadlinePassed when it has not returned by the deadline.

    It runs in a daemon thread, which is left behind when the deadline passes: a socket that
    never answers, or answers a byte at a time (each read within its own timeout), cannot
    hold the caller past the budget, and it ends with the process.
    """
    left = deadline.left()
    if left <= 0:
        raise DeadlinePassed
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = action()
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=run, name="ci-tools-deadline", daemon=True)
    worker.start()
    worker.join(left)
    if worker.is_alive():
        raise DeadlinePassed
    if "error" in box:
        raise box["error"]
    result: T = box["value"]
    return result
