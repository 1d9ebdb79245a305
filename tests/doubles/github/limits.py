"""The GitHub double's REST rate limits, as GitHub documents and answers them ("Rate limits
for the REST API", docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):

* primary: GITHUB_TOKEN makes at most 1,000 requests an hour per repository. Every answer
  carries `x-ratelimit-limit`, `-remaining`, `-used`, `-reset` (epoch seconds when the
  window resets) and `-resource` (`core`). Past the limit: 403 "API rate limit exceeded",
  `x-ratelimit-remaining: 0`, to be retried only after `x-ratelimit-reset`.
* secondary: at most 80 content-creating requests a minute and 500 an hour (every
  POST, PATCH, PUT and DELETE counts here: the documentation does not say which creates
  content, so the double counts each). Past either: 429 "You have exceeded a secondary
  rate limit" with `retry-after` (seconds), to be retried only after it. (GitHub answers
  403 or 429 for either limit; the double answers 403 for the primary, 429 for the
  secondary, so a client must handle both codes.)

A refused request counts toward neither limit. Time is `clock()` (epoch seconds), which a
test may replace to make an hour pass. The double counts per repository, as the primary
limit of GITHUB_TOKEN is counted, and applies the secondary limits to the same count (every
job of a run writes with its own GITHUB_TOKEN, but to one repository).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PRIMARY_PER_HOUR = 1_000
WRITES_PER_MINUTE = 80
WRITES_PER_HOUR = 500
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"


@dataclass(frozen=True)
class Answer:
    status: int  # 0: admitted
    headers: dict[str, str]
    payload: Any = None


@dataclass
class RateLimits:
    clock: Callable[[], float] = time.time
    window_start: float | None = None  # the primary window's start
    used: int = 0  # requests in the primary window
    writes: deque[float] = field(default_factory=deque)  # admitted writes, the last hour
    refused: list[tuple[str, str, int]] = field(default_factory=list)  # method, path, status

    def admit(self, method: str, path: str) -> Answer:
        """Count the request, or refuse it as GitHub does; the headers go on every answer."""
        now = self.clock()
        if self.window_start is None or now >= self.window_start + 3600:
            self.window_start, self.used = now, 0
        reset = str(math.ceil(self.window_start + 3600))
        if self.used >= PRIMARY_PER_HOUR:
            self.refused.append((method, path, 403))
            message = "API rate limit exceeded for installation. Wait for x-ratelimit-reset."
            return Answer(
                403, self._headers(reset), {"message": message, "documentation_url": DOCS}
            )
        if method in WRITE_METHODS:
            wait = self._secondary_wait(now)
            if wait > 0:
                self.refused.append((method, path, 429))
                headers = {**self._headers(reset), "retry-after": str(wait)}
                message = "You have exceeded a secondary rate limit. Please wait a few minutes."
                return Answer(429, headers, {"message": message, "documentation_url": DOCS})
            self.writes.append(now)
        self.used += 1
        return Answer(0, self._headers(reset))

    def _secondary_wait(self, now: float) -> int:
        """Seconds until a write is allowed again; 0: now."""
        while self.writes and self.writes[0] <= now - 3600:
            self.writes.popleft()
        waits = [0.0]
        if len(self.writes) >= WRITES_PER_HOUR:
            waits.append(self.writes[-WRITES_PER_HOUR] + 3600 - now)
        minute = [t for t in self.writes if t > now - 60]
        if len(minute) >= WRITES_PER_MINUTE:
            waits.append(minute[-WRITES_PER_MINUTE] + 60 - now)
        return math.ceil(max(waits))

    def _headers(self, reset: str) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(PRIMARY_PER_HOUR),
            "x-ratelimit-remaining": str(max(PRIMARY_PER_HOUR - self.used, 0)),
            "x-ratelimit-used": str(self.used),
            "x-ratelimit-reset": reset,
            "x-ratelimit-resource": "core",
        }
