"""The shared retry policy: transient errors retried with backoff, bounded by attempts and time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ci_tools.base import retry
from ci_tools.base.retry import RetryPolicy, call


class Transient(Exception):
    pass


class Permanent(Exception):
    pass


class FakeTime:
    """A clock that only sleeping moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def policy(self, **changes: float) -> RetryPolicy:
        base = {"attempts": 5, "total_seconds": 100.0, "initial_seconds": 2.0, "max_seconds": 30.0}
        return RetryPolicy(**{**base, **changes}, sleep=self.sleep, clock=lambda: self.now)  # type: ignore[arg-type]


def _failing(*errors: Exception) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def action() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "done"

    return calls, action


def test_transient_then_success() -> None:
    clock = FakeTime()
    calls, action = _failing(Transient(), Transient())
    result = call(clock.policy(), action, transient=lambda e: isinstance(e, Transient))
    assert result == "done" and len(calls) == 3
    # Exponential with jitter: the second wait is at least the first's base doubled.
    assert 2.0 <= clock.sleeps[0] <= 4.0 and 4.0 <= clock.sleeps[1] <= 6.0


def test_permanent_is_raised_at_once() -> None:
    clock = FakeTime()
    calls, action = _failing(Permanent())
    with pytest.raises(Permanent):
        call(clock.policy(), action, transient=lambda e: isinstance(e, Transient))
    assert len(calls) == 1 and clock.sleeps == []


def test_attempts_bound() -> None:
    clock = FakeTime()
    calls, action = _failing(*[Transient() for _ in range(10)])
    with pytest.raises(Transient):
        call(clock.policy(attempts=3), action, transient=lambda e: True)
    assert len(calls) == 3


def test_total_time_bound() -> None:
    clock = FakeTime()
    calls, action = _failing(*[Transient() for _ in range(50)])
    with pytest.raises(Transient):
        call(clock.policy(attempts=50, total_seconds=60.0), action, transient=lambda e: True)
    assert sum(clock.sleeps) <= 60.0
    assert len(calls) < 50


def test_server_delay_replaces_backoff() -> None:
    clock = FakeTime()
    _, action = _failing(Transient())
    retried: list[tuple[int, float]] = []
    call(
        clock.policy(),
        action,
        transient=lambda e: True,
        server_delay=lambda e: 17.0,
        on_retry=lambda n, e, d: retried.append((n, d)),
    )
    assert clock.sleeps == [17.0]
    assert retried == [(1, 17.0)]


def test_server_delay_beyond_the_budget_stops_now() -> None:
    clock = FakeTime()
    calls, action = _failing(Transient())
    with pytest.raises(Transient):
        call(clock.policy(), action, transient=lambda e: True, server_delay=lambda e: 3600.0)
    assert clock.sleeps == [] and len(calls) == 1


def test_within_returns_what_the_action_returns_or_raises() -> None:
    deadline = retry.Deadline.after(5.0)
    assert retry.within(deadline, lambda: 42) == 42
    with pytest.raises(KeyError):
        retry.within(deadline, lambda: {}["x"])


def test_within_gives_up_on_an_action_that_outlasts_the_deadline() -> None:
    import threading
    import time

    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(retry.DeadlinePassed):
        retry.within(retry.Deadline.after(0.2), lambda: release.wait(30))
    assert time.monotonic() - started < 2
    release.set()


def test_a_spent_deadline_runs_nothing() -> None:
    ran: list[int] = []
    clock = iter([0.0, 10.0]).__next__
    deadline = retry.Deadline.after(5.0, clock)
    with pytest.raises(retry.DeadlinePassed):
        retry.within(deadline, lambda: ran.append(1))
    assert ran == []
