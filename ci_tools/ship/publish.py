"""Publishing variants to a Flox organisation: `flox publish -o ORG VARIANT`.

Only a variant whose result record says build and test passed AT THIS COMMIT (the checkout's
HEAD) is published: a record of another commit proves nothing about what HEAD builds.

Whether a variant is already published is FloxHub's answer, never a local record: `flox
publish` itself asks FloxHub whether this package was already published from this source
revision, before building, and says "Package already published." with the revision
(flox cli/flox/src/commands/publish.rs, the dedup pre-check); that answer is per organisation,
so a variant published to one organisation is never "already published" to another. A re-run
therefore costs one such check per variant, not a build. `--dry-run` asks `flox show ORG/NAME`
(what FloxHub holds for one pkg-path; it does not say from which commit).

`flox publish` refuses an unlocked environment, a dirty checkout, a detached HEAD or a branch
without upstream, and a commit the remote does not have (publish.rs, providers/publish.rs
`gather_build_repo_meta`): all are checked first, so the message says what to do instead of
failing deep inside flox.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ci_tools.base import proc
from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.retry import RetryPolicy, call
from ci_tools.build import results
from ci_tools.build.results import PublishOutcome, PublishStatus, ResultRecord, Status

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


ORG_GRAMMAR = (
    "letters, digits and single hyphens, not starting or ending with a hyphen, "
    "at most 39 characters"
)

# What creates the lock (flox has no `lock` command): `flox list` locks a path environment and
# writes the lock file when it is missing or stale (cli/flox/src/commands/list.rs calls
# `lockfile()`, CoreEnvironment::ensure_locked).
LOCK_COMMAND = "flox list"
LOCKFILE = Path(".flox") / "env" / "manifest.lock"


def validate_org(org: str) -> str:
    if not _ORG.fullmatch(org):
        # ascii(): a newline or control character in the value is shown, not obeyed
        raise InputError(f"--org {org!a} is not a valid organisation name: use {ORG_GRAMMAR}")
    return org


class Refusal(StrEnum):
    NO_RECORD = "no result record"
    NOT_BUILT = "not built"
    BUILD_FAILED = "build failed"
    NOT_TESTED = "not tested"
    TEST_FAILED = "test failed"
    TEST_SKIPPED = "test skipped"
    NO_COMMIT = "the record names no commit"
    OTHER_COMMIT = "built and tested at another commit"


def refusal(record: ResultRecord | None, head: str) -> Refusal | None:
    """Why a variant must not be published from commit `head`; None when its record says it
    passed at that commit."""
    if record is None:
        return Refusal.NO_RECORD
    if record.passed:
        if record.commit is None:
            return Refusal.NO_COMMIT
        if record.commit != head:
            return Refusal.OTHER_COMMIT
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


def head_commit(cwd: Path) -> str:
    """The commit `flox publish` would publish from."""
    inside = proc.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=cwd, timeout=60)
    if not inside.ok:
        raise InputError(f"{cwd}: not a git checkout; `flox publish` publishes from git")
    head = proc.run(["git", "rev-parse", "--verify", "HEAD"], cwd=cwd, timeout=60)
    if not head.ok:
        raise InputError(f"{cwd}: the git checkout has no commit; `flox publish` needs one")
    return head.stdout.strip()


def check_environment(cwd: Path) -> None:
    """The flox environment must open and be locked (`flox publish`: "Environment must be
    locked."); the lock cannot be made here, so say the one command that makes it."""
    if not (cwd / ".flox" / "env.json").is_file():
        raise InputError(
            f"{cwd}: .flox/env.json is missing: flox cannot open the environment "
            "(commit .flox/env.json, as `flox init` writes it)"
        )
    if not (cwd / LOCKFILE).is_file():
        raise InputError(
            f"{cwd}: {LOCKFILE} is missing: `flox publish` refuses an unlocked environment "
            f'("Environment must be locked."). Run `{LOCK_COMMAND}` in {cwd} (it locks the '
            f"environment and writes {LOCKFILE}), then commit and push {LOCKFILE}"
        )


def check_token(environ: Mapping[str, str]) -> None:
    """In CI nobody ran `flox auth login`: flox (>= 1.14) authenticates from
    FLOX_FLOXHUB_TOKEN, and without it `flox publish` fails with "You are not logged in to
    FloxHub" (cli/flox/src/commands/mod.rs `ensure_auth`). The token itself is never shown."""
    if environ.get("CI") and not environ.get("FLOX_FLOXHUB_TOKEN"):
        raise InputError(
            "FLOX_FLOXHUB_TOKEN is not set: in CI `flox publish` (flox >= 1.14) "
            "authenticates with it; pass the FloxHub token secret to this step's environment"
        )


def check_checkout(cwd: Path) -> None:
    """`flox publish` builds from the committed, pushed state: refuse anything else."""
    head_commit(cwd)
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
    upstream = proc.run(
        ["git", "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"], cwd=cwd, timeout=60
    )
    if not upstream.ok:
        raise InputError(
            f"{cwd}: HEAD is not a branch with an upstream; `flox publish` refuses a detached "
            "HEAD or a branch without upstream (check out the branch, e.g. "
            "`git checkout -B BRANCH COMMIT && git branch --set-upstream-to=origin/BRANCH`)"
        )
    remote = proc.run(["git", "branch", "-r", "--contains", "HEAD"], cwd=cwd, timeout=120)
    if not remote.ok or not remote.stdout.strip():
        raise InputError(
            f"{cwd}: HEAD is not on any remote branch; `flox publish` needs the commit pushed "
            "(git push, then run again)"
        )


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a publish run will do with each named variant: `flox publish` the authorised ones
    (flox skips what FloxHub already has from this commit), refuse the rest."""

    publish: tuple[str, ...]
    refused: tuple[tuple[str, Refusal], ...]


def plan(variants: Sequence[str], records: dict[str, ResultRecord | None], head: str) -> Plan:
    to_publish: list[str] = []
    refused: list[tuple[str, Refusal]] = []
    for name in dict.fromkeys(variants):
        reason = refusal(records.get(name), head)
        if reason is not None:
            refused.append((name, reason))
        else:
            to_publish.append(name)
    return Plan(publish=tuple(to_publish), refused=tuple(refused))


def show_argv(org: str, variant: str) -> list[str]:
    return ["flox", "show", f"{org}/{variant}"]


_LATEST = re.compile(r"^Latest:\s+\S+@(\S+)\s*$", re.MULTILINE)
_NOT_FOUND = "no packages matched this pkg-path"


def floxhub_latest(org: str, variant: str, *, cwd: Path) -> str | None:
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
    output = ""

    def attempt() -> None:
        nonlocal attempts, output
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
        output = result.stdout

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
    """Publish what passed at HEAD; raise FailedError naming every refused or failed variant."""
    validate_org(org)
    # Input first (records are bad input, exit 2), then the checkout they are checked against.
    records = load_records(results_dir, variants, branch)
    head = head_commit(cwd)
    chosen = plan(variants, records, head)
    for name, reason in chosen.refused:
        say(f"{name}: refused: {reason}{_commit_detail(records.get(name), reason, head)}")
    failed: list[str] = []
    if dry_run:
        _dry_run(chosen.publish, org, cwd, say)
    elif chosen.publish:
        proc.require("flox")
        check_token(os.environ)
        check_environment(cwd)
        check_checkout(cwd)
        failed = _publish_all(chosen.publish, records, org, results_dir, cwd, policy, say)
    _raise_failures(chosen.refused, failed)


def _commit_detail(record: ResultRecord | None, reason: Refusal, head: str) -> str:
    if reason is Refusal.OTHER_COMMIT and record is not None and record.commit is not None:
        return f" ({record.commit[:12]}; HEAD is {head[:12]}: build and test at HEAD first)"
    if reason is Refusal.NO_COMMIT:
        return " (only a build and test recorded at HEAD may publish)"
    return " (only variants whose build and test passed publish)"


def _dry_run(names: Sequence[str], org: str, cwd: Path, say: Callable[[str], None]) -> None:
    try:
        check_environment(cwd)
    except InputError as exc:
        say(f"warning: a real run would stop here: {exc}")
    floxhub = proc.which("flox") is not None
    for name in names:
        line = f"would run: {shlex.join(publish_argv(org, name))}"
        if not floxhub:
            say(f"{line} (flox is not on PATH: FloxHub not asked)")
            continue
        try:
            latest = floxhub_latest(org, name, cwd=cwd)
        except PublishError as exc:
            first = (exc.output.strip().splitlines() or ["no output"])[0]
            say(f"{line} (FloxHub could not be asked: {first})")
            continue
        if latest is None:
            say(f"{line} (FloxHub has no {org}/{name})")
        else:
            say(
                f"{line} (FloxHub has {org}/{name} {latest}; flox publish skips it if this "
                "commit's build is already there)"
            )


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
        if outcome.status is PublishStatus.PUBLISHED and outcome.detail.startswith(ALREADY):
            say(f"{name}: {outcome.detail} (FloxHub's answer through flox publish); skipped")
        elif outcome.status is PublishStatus.PUBLISHED:
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
