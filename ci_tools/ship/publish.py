"""Publishing variants to a Flox organisation: `flox publish -o ORG VARIANT`.

A pipeline of the ship steps: `authorise` says which variants passed at HEAD, `checkout`
refuses what flox would refuse before flox runs, `floxhub` runs `flox publish` (or, for
`--dry-run`, asks FloxHub with `flox show`), and each outcome is written to its record.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ci_tools.base import narinfo, nixcache, proc
from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.retry import RetryPolicy
from ci_tools.build import results
from ci_tools.build.results import PublishOutcome, PublishStatus, ResultRecord
from ci_tools.build.smoke.expect import Expectations
from ci_tools.ship import authorise, binding, checkout, floxhub, floxlog
from ci_tools.ship.authorise import Refused
from ci_tools.ship.floxhub import ALREADY, PublishError, publish_argv

# GitHub's rule for organisation names, which Flox follows: letters, digits and single
# hyphens, not at either end, at most 39 characters.
_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
ORG_GRAMMAR = (
    "letters, digits and single hyphens, not starting or ending with a hyphen, "
    "at most 39 characters"
)


def is_org(text: str) -> bool:
    """Whether `text` is an organisation name (what `flox install ORG/NAME` may hold)."""
    return _ORG.fullmatch(text) is not None


def validate_org(org: str) -> str:
    if not is_org(org):
        # ascii(): a newline or control character in the value is shown, not obeyed
        raise InputError(f"--org {org!a} is not a valid organisation name: use {ORG_GRAMMAR}")
    return org


def run(
    variants: Sequence[str],
    *,
    org: str,
    results_dir: Path,
    cwd: Path,
    dry_run: bool,
    branch: str | None = None,
    scopes: Mapping[str, str] | None = None,
    expected: Mapping[str, Expectations],
    policy: RetryPolicy,
    say: Callable[[str], None] = print,
) -> None:
    """Publish what the publish policy lets publish at HEAD, each variant judged by what the
    fleet can do for it (`scopes`, its route) and against the checks the catalog's
    expectations of it ask (`expected`); raise FailedError naming every refused or
    failed variant."""
    validate_org(org)
    # Input first (records are bad input, exit 2), then the checkout they are checked against.
    records = authorise.load_records(results_dir, variants, branch)
    head = checkout.head_commit(cwd)
    chosen = authorise.plan(variants, records, head, scopes or {}, expected)
    for name, reason in chosen.refused:
        say(f"{name}: refused: {reason}{authorise.explain(records.get(name), reason, head)}")
    failed: list[str] = []
    if dry_run:
        _dry_run(chosen.publish, org, cwd, say)
    elif chosen.publish:
        proc.require("flox")
        checkout.check_token(os.environ)
        checkout.check_environment(cwd)
        checkout.check_checkout(cwd)
        failed = _publish_all(chosen.publish, records, org, results_dir, cwd, policy, say)
    _raise_failures(chosen.refused, failed)


def _dry_run(names: Sequence[str], org: str, cwd: Path, say: Callable[[str], None]) -> None:
    try:
        checkout.check_environment(cwd)
    except InputError as exc:
        say(f"warning: a real run would stop here: {exc}")
    asks = proc.which("flox") is not None
    for name in names:
        line = f"would run: {shlex.join(publish_argv(org, name))}"
        if not asks:
            say(f"{line} (flox is not on PATH: FloxHub not asked)")
            continue
        try:
            latest = floxhub.latest_version(org, name, cwd=cwd)
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
        outcome = _publish_tested(record, org, cwd, policy, say)
        results.save(record.with_publish(outcome), results.result_path(results_dir, name))
        if outcome.status is PublishStatus.PUBLISHED and outcome.detail.startswith(ALREADY):
            say(f"{name}: {outcome.detail} (FloxHub's answer through flox publish); skipped")
        elif outcome.status is PublishStatus.PUBLISHED:
            say(f"{name}: published to {org} (attempts: {outcome.attempts})")
        else:
            say(f"{name}: publish failed: {outcome.detail}")
            failed.append(name)
    return failed


def _publish_tested(
    record: ResultRecord,
    org: str,
    cwd: Path,
    policy: RetryPolicy,
    say: Callable[[str], None],
) -> PublishOutcome:
    """`flox publish` of the tested bytes: refused before flox runs when this runner's store
    holds other bytes at the tested path, failed after when flox uploaded others."""
    why = binding.before_upload(record, _nar_hash_here)
    if why is not None:
        return PublishOutcome(
            status=PublishStatus.FAILED, org=org, attempts=0, detail=f"not the tested bytes: {why}"
        )
    say(f"$ {shlex.join(publish_argv(org, record.variant))}")
    heard = _Heard(say)
    outcome = floxhub.publish_one(org, record.variant, cwd=cwd, policy=policy, say=heard)
    return _bound(record, outcome, heard.lines)


class _Heard:
    """Keeps each line of flox's output to read the uploads from, and passes on what may be
    shown: of its debug records only the uploaded path (floxlog: the rest may hold URLs and
    command lines)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if not floxlog.is_record(line):
            self.say(line)
            return
        for path in floxlog.uploaded_paths([line]):
            self.say(f"  Uploading '{path}'")


def _nar_hash_here(path: str) -> str | None:
    env = dict(os.environ)
    if nixcache.check_store_path(path, env) is not None:
        return None
    try:
        return narinfo.one(path, env).nar_hash
    except narinfo.NarInfoError:
        return None


def _bound(record: ResultRecord, outcome: PublishOutcome, lines: list[str]) -> PublishOutcome:
    """The outcome, failed when what flox uploaded is not the tested bytes (ship/binding.py)."""
    if outcome.status is not PublishStatus.PUBLISHED or outcome.detail.startswith(ALREADY):
        return outcome  # nothing uploaded now: the earlier publish was bound, or failed
    if record.build is None or not record.build.outputs:
        return outcome  # not reached: binding.before_upload refused it before flox ran
    uploaded = floxlog.uploaded_paths(lines)
    why = binding.refusal(record, uploaded, _nar_hash_here, floxlog.declined(lines))
    if why is None:
        return outcome
    return replace(outcome, status=PublishStatus.FAILED, detail=f"not the tested bytes: {why}")


def _raise_failures(refused: Sequence[tuple[str, Refused]], failed: Sequence[str]) -> None:
    parts = [f"{name} ({reason})" for name, reason in refused]
    parts += [f"{name} (publish failed)" for name in failed]
    if parts:
        raise FailedError(f"not published: {', '.join(parts)}")
