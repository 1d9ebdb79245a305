"""`flox publish` and `flox show`: their command lines, retries, and what FloxHub answered.

Whether a variant is already published is FloxHub's answer, never a local record: `flox
publish` itself asks FloxHub whether this package was already published from this source
revision, before building, and says "Package already published." with the revision
(flox cli/flox/src/commands/publish.rs, the dedup pre-check); that answer is per organisation,
so a variant published to one organisation is never "already published" to another. A re-run
therefore costs one such check per variant, not a build. `flox show ORG/NAME` says what
FloxHub holds for one pkg-path (not from which commit): what a dry run reports.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Callable
from pathlib import Path

from ci_tools.base import proc
from ci_tools.base.retry import RetryPolicy, call
from ci_tools.build.results import PublishOutcome, PublishStatus
from ci_tools.catalog.names import flox_target
from ci_tools.ship import floxlog

# Output of `flox publish` that means "try again later", not "your package is wrong".
TRANSIENT_MESSAGES: tuple[str, ...] = (
    "connection reset",
    "connection refused",
    "connection timed out",
    "timed out",
    "timeout",
    "temporary failure in name resolution",
    "could not resolve host",
    "network is unreachable",
    "tls handshake",
    "unexpected eof",
    "500 internal server error",
    "502 bad gateway",
    "503 service unavailable",
    "504 gateway timeout",
    "rate limit",
    "too many requests",
)

# Long enough for `flox publish`, which builds the package locally before uploading.
PUBLISH_TIMEOUT_SECONDS = 6 * 3600


def is_transient(output: str) -> bool:
    lowered = output.lower()
    return any(message in lowered for message in TRANSIENT_MESSAGES)


def publish_argv(org: str, variant: str) -> list[str]:
    return ["flox", "publish", "-o", org, flox_target(variant)]


class PublishError(Exception):
    """One failed `flox publish`; `transient` says whether trying again may help."""

    def __init__(self, output: str, *, transient: bool) -> None:
        super().__init__(output)
        self.output = output
        self.transient = transient


def show_argv(org: str, variant: str) -> list[str]:
    return ["flox", "show", f"{org}/{flox_target(variant)}"]


_LATEST = re.compile(r"^Latest:\s+\S+@(\S+)\s*$", re.MULTILINE)
_NOT_FOUND = "no packages matched this pkg-path"


def latest_version(org: str, variant: str, *, cwd: Path) -> str | None:
    """FloxHub's latest version of ORG/VARIANT, asked with `flox show` (commands/show.rs:
    "Latest:  PKG@VERSION", or "no packages matched this pkg-path"); None when it has none.
    Raises PublishError when FloxHub could not be asked."""
    result = proc.run(show_argv(org, variant), cwd=cwd, timeout=300)
    output = result.stdout + result.stderr
    if result.ok:
        found = _LATEST.search(result.stdout)
        return found.group(1) if found else "unknown version"
    if _NOT_FOUND in output:
        return None
    raise PublishError(output, transient=is_transient(output))


_ALREADY = "Package already published."
ALREADY = "already published"
_SOURCE_REV = re.compile(r"^Source revision:\s*(\S+)", re.MULTILINE)


def already_published_rev(output: str) -> str | None:
    """The source revision when `flox publish` said FloxHub already has this build
    (commands/publish.rs, DedupOutcome::AlreadyPublished); None otherwise."""
    if _ALREADY not in output:
        return None
    found = _SOURCE_REV.search(output)
    return found.group(1) if found else "unknown"


# The lines of flox's output a failure quotes from (its debug records aside).
KEPT_LINES = 40


def _publish_once(org: str, variant: str, *, cwd: Path, say: Callable[[str], None]) -> str:
    """One `flox publish`: what may be shown of its output, or PublishError. Its debug
    records are heard by `say`'s owner, never stored or shown (floxlog): the lines kept are
    the last of flox's others, however many records came after them."""
    kept: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)

    def on_line(line: str) -> None:
        say(f"  {line}")
        if not floxlog.is_record(line):
            kept.append(line)

    result = proc.stream(
        publish_argv(org, variant),
        on_line=on_line,
        cwd=cwd,
        # flox then names every path it uploads, on a pipe too (ship/floxlog.py)
        env=floxlog.flox_log_env(os.environ),
        timeout=PUBLISH_TIMEOUT_SECONDS,
        keep_lines=1,  # `kept` is what is kept
    )
    shown = "\n".join(kept)
    if result.timed_out:
        raise PublishError(f"timed out after {PUBLISH_TIMEOUT_SECONDS} s\n{shown}", transient=False)
    if not result.ok:
        raise PublishError(shown, transient=is_transient(shown))
    return shown


def publish_one(
    org: str,
    variant: str,
    *,
    cwd: Path,
    policy: RetryPolicy,
    say: Callable[[str], None],
) -> PublishOutcome:
    """Run `flox publish` with retries on transient failures; never raises for a failure.
    `say` hears every line flox wrote, its debug records included (they name the uploads):
    it decides what to show."""
    attempts = 0
    output = ""

    def attempt() -> None:
        nonlocal attempts, output
        attempts += 1
        output = _publish_once(org, variant, cwd=cwd, say=say)

    def on_retry(number: int, exc: BaseException, delay: float) -> None:
        say(f"{variant}: attempt {number} failed transiently; retrying in {delay:.0f} s")

    try:
        call(
            policy,
            attempt,
            transient=lambda exc: isinstance(exc, PublishError) and exc.transient,
            on_retry=on_retry,
        )
    except PublishError as exc:
        tail = "\n".join(exc.output.strip().splitlines()[-5:])
        kind = "transient, gave up" if exc.transient else "permanent"
        return PublishOutcome(
            status=PublishStatus.FAILED,
            org=org,
            attempts=attempts,
            detail=f"{kind} after {attempts} attempt(s): {tail}",
        )
    rev = already_published_rev(output)
    detail = f"{ALREADY} to {org} from {rev}" if rev is not None else ""
    return PublishOutcome(status=PublishStatus.PUBLISHED, org=org, attempts=attempts, detail=detail)
