"""Which failed GitHub API calls are worth another try, and how long GitHub asks to wait.

5xx answers, network trouble and rate limits are transient; a 4xx about the request itself
never is (GitHub's REST docs, "Rate limits for the REST API": a 403 or 429 with Retry-After or
x-ratelimit-remaining 0 is a rate limit).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from ci_tools.base import digits


def is_transient(exc: BaseException) -> bool:
    """5xx, network trouble and rate limits; never 4xx answers about the request itself."""
    from github import GithubException, RateLimitExceededException
    from requests import ConnectionError as RequestsConnectionError
    from requests import Timeout

    if isinstance(exc, RequestsConnectionError | Timeout):
        return True
    if not isinstance(exc, GithubException):
        return False
    if exc.status >= 500 or exc.status == 429 or isinstance(exc, RateLimitExceededException):
        return True
    headers = _lower(exc.headers)
    return exc.status == 403 and (
        "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"
    )


def is_dns_failure(exc: BaseException) -> bool:
    """A host name that did not resolve (socket.gaierror), however requests and urllib3 wrap
    it: their exceptions keep the cause in `__cause__`, `__context__`, `reason` or `args`."""
    import socket

    seen: set[int] = set()
    todo: list[object] = [exc]
    while todo and len(seen) < 32:
        item = todo.pop()
        if id(item) in seen or not isinstance(item, BaseException):
            continue
        seen.add(id(item))
        if isinstance(item, socket.gaierror) or type(item).__name__ == "NameResolutionError":
            return True
        todo += [item.__cause__, item.__context__, getattr(item, "reason", None), *item.args]
    return False


def server_delay(exc: BaseException, now: Callable[[], float] = time.time) -> float | None:
    """The wait a rate-limited answer asks for: Retry-After, else until x-ratelimit-reset."""
    from github import GithubException

    if not isinstance(exc, GithubException):
        return None
    headers = _lower(exc.headers)
    # RFC 9110 §10.2.3: Retry-After is delay-seconds (1*DIGIT) or a date, which is ignored.
    if "retry-after" in headers:
        seconds = digits.whole(headers["retry-after"].strip(), max_digits=9)
        return None if seconds is None else float(seconds)
    if "x-ratelimit-reset" in headers and headers.get("x-ratelimit-remaining") == "0":
        reset = digits.whole(headers["x-ratelimit-reset"].strip(), max_digits=12)
        return None if reset is None else max(0.0, reset - now() + 1)
    return None


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (headers or {}).items()}
