"""`flox build` for variants: streamed live, timed, retried only when the failure is transient,
recorded with its store path and closure size.

A stack (pytorch-X, then torchvision-X, ...) builds base first and stops at its first failure:
the later members would only rebuild the same broken base.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from ci_tools.base import bounded, digits, narinfo, nixcache, proc, retry
from ci_tools.base.retry import RetryPolicy
from ci_tools.build.results import BuildOutcome, Output, Status
from ci_tools.catalog.names import flox_target
from ci_tools.catalog.stacks import stacks
from ci_tools.catalog.variants import Variant

# Failures that say nothing about the recipe: the network, a binary cache or the Nix daemon
# failed. Only these are retried. Each name is what the log line says when it is printed.
TRANSIENT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("download failed", re.compile(r"unable to download", re.IGNORECASE)),
    ("HTTP server error", re.compile(r"HTTP error 5\d\d", re.IGNORECASE)),
    ("connection reset", re.compile(r"Connection reset", re.IGNORECASE)),
    (
        "connection timed out",
        re.compile(r"Connection timed out|Operation timed out", re.IGNORECASE),
    ),
    ("host name not resolved", re.compile(r"Could not resolve host", re.IGNORECASE)),
    (
        "Nix daemon unreachable",
        re.compile(r"cannot connect to socket at .*daemon-socket", re.IGNORECASE),
    ),
    ("truncated transfer", re.compile(r"unexpected end-of-file", re.IGNORECASE)),
    ("substituter failed", re.compile(r"some substitutes .*failed", re.IGNORECASE)),
)

# Failures of the build itself. They win over any transient line in the same log (a compile
# error after a retried download is still a compile error), so they are never retried.
PERMANENT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("compiler error", re.compile(r"^\S+:\d+(:\d+)?: (fatal )?error:", re.MULTILINE)),
    ("nvcc error", re.compile(r"nvcc fatal|ptxas fatal", re.IGNORECASE)),
    ("link error", re.compile(r"undefined reference to|collect2: error|ld: cannot find")),
    ("build stopped", re.compile(r"ninja: build stopped|make(\[\d+\])?: \*\*\* ")),
    ("CMake error", re.compile(r"CMake Error")),
    ("hash mismatch", re.compile(r"hash mismatch in fixed-output derivation")),
    (
        "Nix evaluation error",
        re.compile(
            r"error: (undefined variable|attribute .* missing|syntax error|infinite recursion)"
        ),
    ),
)

_RECOVERED = re.compile(r"retrying in \d+ ?m?s", re.IGNORECASE)

# A record keeps the end of the build's log: its last lines, at most this many bytes in all
# (each line already cut by `proc.stream`), so a log of huge lines never makes a record that
# its readers refuse as too large.
LOG_TAIL_LINES = 60
LOG_TAIL_BYTES = 32 << 10
NIX_STORE = "/nix/store"


def transient_reason(log: str) -> str | None:
    """The name of the transient failure a failed build's log shows; None if it is permanent."""
    if any(pattern.search(log) for _, pattern in PERMANENT_PATTERNS):
        return None
    # Nix retries downloads itself and says so; a line it recovered from did not fail the build.
    unrecovered = "\n".join(line for line in log.splitlines() if not _RECOVERED.search(line))
    for name, pattern in TRANSIENT_PATTERNS:
        if pattern.search(unrecovered):
            return name
    return None


# A build takes hours: wait a minute before the first retry, at most ten between tries, and
# give up after three attempts whatever the clock says.
BUILD_RETRY = RetryPolicy(
    attempts=3, initial_seconds=60.0, max_seconds=600.0, total_seconds=24 * 3600.0
)


@dataclass(frozen=True, kw_only=True)
class Attempt:
    ok: bool
    returncode: int
    seconds: float
    tail: str
    transient: str | None  # the named transient failure, when it failed for one


@dataclass(frozen=True, kw_only=True)
class Builder:
    """How to run builds: where, with what environment, and how to retry."""

    flox: str
    cwd: Path
    env: Mapping[str, str]
    policy: RetryPolicy = BUILD_RETRY
    echo: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    clock: Callable[[], str] = field(default=lambda: utc_now())


def result_link(cwd: Path, variant: str) -> Path:
    """Where `flox build VARIANT` leaves its output: ./result-VARIANT (flox's spelling)."""
    return cwd / f"result-{flox_target(variant)}"


def parse_path_info(text: str) -> int | None:
    """`nix path-info -S PATH` prints `PATH<spaces>BYTES`; the closure size in bytes."""
    for line in text.splitlines():
        fields = line.split()
        size = digits.whole(fields[-1]) if len(fields) >= 2 else None
        if size is not None:
            return size
    return None


def closure_bytes(store_path: str, env: Mapping[str, str]) -> int | None:
    """The closure size of a store path, where `nix` is on PATH; None where it cannot tell."""
    store = env.get("NIX_STORE_DIR", NIX_STORE)
    if not store_path.startswith(store + "/") or proc.which("nix", env) is None:
        return None
    result = proc.run(
        ["nix", "--extra-experimental-features", "nix-command", "path-info", "-S", store_path],
        env=env,
        timeout=300,
    )
    return parse_path_info(result.stdout) if result.ok else None


def outputs_of(store_path: str, env: Mapping[str, str]) -> tuple[Output, ...]:
    """The output's NAR hash and size as the store registered them (`nix path-info --json`),
    so the test and publish legs can tell these bytes from any others; () where Nix cannot
    tell (no nix on PATH, not a store path)."""
    if nixcache.check_store_path(store_path, env) is not None or proc.which("nix", env) is None:
        return ()
    try:
        info = narinfo.one(store_path, env)
    except narinfo.NarInfoError:
        return ()
    return (Output(store_path=info.path, nar_hash=info.nar_hash, nar_size=info.nar_size),)


def attempt_build(variant: str, builder: Builder) -> Attempt:
    result = proc.stream(
        [builder.flox, "build", flox_target(variant)],
        on_line=builder.echo,
        cwd=builder.cwd,
        env=builder.env,
        timeout=None,
    )
    tail = bounded.tail_text(
        "\n".join(result.stdout.splitlines()[-LOG_TAIL_LINES:]), LOG_TAIL_BYTES
    )
    return Attempt(
        ok=result.ok,
        returncode=result.returncode,
        seconds=result.seconds,
        tail=tail,
        transient=None if result.ok else transient_reason(result.stdout),
    )


class _TransientFailure(Exception):
    """A failed attempt whose log names a transient cause: worth another try."""

    def __init__(self, attempt: Attempt) -> None:
        super().__init__(attempt.transient)
        self.attempt = attempt


def build_one(variant: str, builder: Builder) -> BuildOutcome:
    """Build one variant, retrying transient failures within the policy's bounds."""
    policy = builder.policy
    attempts: list[Attempt] = []

    def once() -> Attempt:
        builder.echo(f"==> flox build {variant} (attempt {len(attempts) + 1} of {policy.attempts})")
        attempt = attempt_build(variant, builder)
        attempts.append(attempt)
        if attempt.transient is not None:
            raise _TransientFailure(attempt)
        return attempt

    def announce(_number: int, exc: BaseException, delay: float) -> None:
        builder.echo(f"==> {variant}: transient failure ({exc}); retrying in {delay:.0f} s")

    try:
        last = retry.call(
            policy,
            once,
            transient=lambda exc: isinstance(exc, _TransientFailure),
            on_retry=announce,
        )
    except _TransientFailure as exc:
        last = exc.attempt
    store_path = None
    closure = None
    outputs: tuple[Output, ...] = ()
    if last.ok:
        link = result_link(builder.cwd, variant)
        if link.exists():
            store_path = str(link.resolve())
            closure = closure_bytes(store_path, builder.env)
            outputs = outputs_of(store_path, builder.env)
        else:
            builder.echo(f"==> {variant}: flox reported success but left no {link.name}")
    return BuildOutcome(
        status=Status.PASSED if last.ok else Status.FAILED,
        seconds=round(sum(a.seconds for a in attempts), 3),
        store_path=store_path,
        closure_bytes=closure,
        outputs=outputs,
        log_tail=last.tail,
        attempts=len(attempts),
    )


def not_built(after: str) -> BuildOutcome:
    return BuildOutcome(
        status=Status.SKIPPED,
        seconds=0.0,
        log_tail=f"not built: {after} failed before it in the same stack",
    )


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _ignore(*_args: object) -> None:
    return None


def build_variants(
    variants: Sequence[Variant],
    builder: Builder,
    *,
    on_start: Callable[[Variant, BuildOutcome], None] = _ignore,
    on_end: Callable[[Variant, BuildOutcome], None] = _ignore,
) -> list[tuple[Variant, BuildOutcome]]:
    """Build every variant, stack by stack, base first; a stack stops at its first failure.

    `on_start` gets a STARTED outcome before each build and `on_end` the outcome as soon as it
    is known, so the caller records each package as it goes: a job killed in the middle of a
    stack keeps the record of every package that finished and names the one that was running.
    """
    outcomes: list[tuple[Variant, BuildOutcome]] = []
    for stack in stacks(variants):
        failed: str | None = None
        for variant in stack.variants:
            if failed is not None:
                outcome = not_built(failed)
                builder.echo(f"==> {variant.name}: {outcome.log_tail}")
            else:
                started = builder.clock()
                on_start(
                    variant, BuildOutcome(status=Status.STARTED, seconds=0.0, started_at=started)
                )
                outcome = replace(build_one(variant.name, builder), started_at=started)
                if outcome.status is Status.FAILED:
                    failed = variant.name
            on_end(variant, outcome)
            outcomes.append((variant, outcome))
    return outcomes
