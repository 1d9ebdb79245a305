"""The one retry mechanism of build, publish and release: tenacity, bounded, injectable sleep.

Each caller says what is transient; this module says how long to keep trying. A caller may
also name a delay the server asked for (Retry-After), which replaces the backoff for that wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

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
