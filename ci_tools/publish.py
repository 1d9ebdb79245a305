"""Publishing variants to a Flox organisation: `flox publish -o ORG VARIANT`.

Only variants whose result record says build and test passed are published; a variant that
is already published is skipped, so a re-run publishes only what is missing. `flox publish`
builds from the git checkout and needs it clean and pushed: both are checked first, so the
message says what to do instead of failing deep inside flox.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ci_tools import proc, results
from ci_tools.errors import FailedError, InputError
from ci_tools.results import PublishOutcome, PublishStatus, ResultRecord, Status
from ci_tools.retry import RetryPolicy, call

# GitHub's rule for organisation names, which Flox follows: letters, digits and single
# hyphens, not at either end, at most 39 characters.
_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")

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


def validate_org(org: str) -> str:
    if not _ORG.fullmatch(org):
        raise InputError(
            f'--org "{org}" is not a valid organisation name: use letters, digits and single '
            "hyphens, not starting or ending with a hyphen, at most 39 characters"
        )
    return org


class Refusal(StrEnum):
    NO_RECORD = "no result record"
    NOT_BUILT = "not built"
    BUILD_FAILED = "build failed"
    NOT_TESTED = "not tested"
    TEST_FAILED = "test failed"
    TEST_SKIPPED = "test skipped"


def refusal(record: ResultRecord | None) -> Refusal | None:
    """Why a variant must not be published; None when its record says it passed."""
    if record is None:
        return Refusal.NO_RECORD
    if record.passed:
        return None
    if record.build is None:
        return Refusal.NOT_BUILT
    if record.build.status is not Status.PASSED:
        return Refusal.BUILD_FAILED
    if record.test is None:
        return Refusal.NOT_TESTED
    if record.test.status is Status.FAILED:
        return Refusal.TEST_FAILED
    return Refusal.TEST_SKIPPED


def is_transient(output: str) -> bool:
    lowered = output.lower()
    return any(message in lowered for message in TRANSIENT_MESSAGES)


def publish_argv(org: str, variant: str) -> list[str]:
    return ["flox", "publish", "-o", org, variant]


class PublishError(Exception):
    """One failed `flox publish`; `transient` says whether trying again may help."""

    def __init__(self, output: str, *, transient: bool) -> None:
        super().__init__(output)
        self.output = output
        self.transient = transient


def check_checkout(cwd: Path) -> None:
    """`flox publish` builds from the committed, pushed state: refuse anything else."""
    inside = proc.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=cwd, timeout=60)
    if not inside.ok:
        raise InputError(f"{cwd}: not a git checkout; `flox publish` publishes from git")
    status = proc.run(["git", "status", "--porcelain"], cwd=cwd, timeout=120)
    if not status.ok:
        raise InputError(f"{cwd}: `git status` failed: {status.stderr.strip()}")
    if status.stdout.strip():
        changed = status.stdout.rstrip().splitlines()
        shown = "\n  ".join(changed[:10]) + ("\n  ..." if len(changed) > 10 else "")
        raise InputError(
            f"{cwd}: the git checkout is not clean; `flox publish` needs every change "
            f"committed (commit or stash these, or add build outputs to .gitignore):\n  {shown}"
        )
    remote = proc.run(["git", "branch", "-r", "--contains", "HEAD"], cwd=cwd, timeout=120)
    if not remote.ok or not remote.stdout.strip():
        raise InputError(
            f"{cwd}: HEAD is not on any remote branch; `flox publish` needs the commit pushed "
            "(git push, then run again)"
        )


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a publish run will do with each named variant."""

    publish: tuple[str, ...]
    already: tuple[str, ...]
    refused: tuple[tuple[str, Refusal], ...]


def plan(variants: Sequence[str], records: dict[str, ResultRecord | None]) -> Plan:
    to_publish: list[str] = []
    already: list[str] = []
    refused: list[tuple[str, Refusal]] = []
    for name in dict.fromkeys(variants):
        record = records.get(name)
        reason = refusal(record)
        if reason is not None:
            refused.append((name, reason))
        elif record is not None and record.published:
            already.append(name)
        else:
            to_publish.append(name)
    return Plan(publish=tuple(to_publish), already=tuple(already), refused=tuple(refused))


def load_records(
    results_dir: Path, variants: Sequence[str], branch: str | None
) -> dict[str, ResultRecord | None]:
    """The record of each variant, None where there is none. CPU variants have the same name
    on every branch, so a record of another branch is refused rather than trusted."""
    out: dict[str, ResultRecord | None] = {}
    for name in variants:
        path = results.result_path(results_dir, name)
        record = results.load(path) if path.exists() else None
        if record is not None and branch is not None and record.branch != branch:
            raise InputError(f"{path}: a record of branch {record.branch}, not {branch}")
        out[name] = record
    return out


def publish_one(
    org: str,
    variant: str,
    *,
    cwd: Path,
    policy: RetryPolicy,
    say: Callable[[str], None],
) -> PublishOutcome:
    """Run `flox publish` with retries on transient failures; never raises for a failure."""
    attempts = 0

    def attempt() -> None:
        nonlocal attempts
        attempts += 1
        result = proc.stream(
            publish_argv(org, variant),
            on_line=lambda line: say(f"  {line}"),
            cwd=cwd,
            timeout=PUBLISH_TIMEOUT_SECONDS,
            keep_lines=40,
        )
        if result.timed_out:
            raise PublishError(
                f"timed out after {PUBLISH_TIMEOUT_SECONDS} s\n{result.stdout}", transient=False
            )
        if not result.ok:
            raise PublishError(result.stdout, transient=is_transient(result.stdout))

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
    return PublishOutcome(status=PublishStatus.PUBLISHED, org=org, attempts=attempts)


def run(
    variants: Sequence[str],
    *,
    org: str,
    results_dir: Path,
    cwd: Path,
    dry_run: bool,
    branch: str | None = None,
    policy: RetryPolicy,
    say: Callable[[str], None] = print,
) -> None:
    """Publish what passed; raise FailedError naming every refused or failed variant."""
    validate_org(org)
    records = load_records(results_dir, variants, branch)
    chosen = plan(variants, records)
    for name in chosen.already:
        say(f"{name}: already published to {org}; skipped")
    for name, reason in chosen.refused:
        say(f"{name}: refused: {reason} (only variants whose build and test passed publish)")
    failed: list[str] = []
    if dry_run:
        for name in chosen.publish:
            say(f"would run: {shlex.join(publish_argv(org, name))}")
    elif chosen.publish:
        proc.require("flox")
        check_checkout(cwd)
        failed = _publish_all(chosen.publish, records, org, results_dir, cwd, policy, say)
    _raise_failures(chosen.refused, failed)


def _publish_all(
    names: Sequence[str],
    records: dict[str, ResultRecord | None],
    org: str,
    results_dir: Path,
    cwd: Path,
    policy: RetryPolicy,
    say: Callable[[str], None],
) -> list[str]:
    failed: list[str] = []
    for name in names:
        record = records[name]
        assert record is not None  # the plan publishes only variants with a passing record
        say(f"$ {shlex.join(publish_argv(org, name))}")
        outcome = publish_one(org, name, cwd=cwd, policy=policy, say=say)
        results.save(record.with_publish(outcome), results.result_path(results_dir, name))
        if outcome.status is PublishStatus.PUBLISHED:
            say(f"{name}: published to {org} (attempts: {outcome.attempts})")
        else:
            say(f"{name}: publish failed: {outcome.detail}")
            failed.append(name)
    return failed


def _raise_failures(refused: Sequence[tuple[str, Refusal]], failed: Sequence[str]) -> None:
    parts = [f"{name} ({reason})" for name, reason in refused]
    parts += [f"{name} (publish failed)" for name in failed]
    if parts:
        raise FailedError(f"not published: {', '.join(parts)}")
