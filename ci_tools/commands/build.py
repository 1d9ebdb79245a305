"""`ci-tools build VARIANT...`: run `flox build` for each variant and record the outcome.

Where runners.yaml names a binary cache, each package's closure is signed and pushed there as
soon as it is built, so that its test and publish legs on other runners substitute it; a push
that fails leaves the record "built, not pushed" with the reason (a warning; the test leg that
needs the path fails naming it)."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

from ci_tools.base import ghoutput, nixcache, proc
from ci_tools.base.errors import EXIT_FAILED, EXIT_OK
from ci_tools.build import flox_build
from ci_tools.build.report import format_bytes, format_minutes
from ci_tools.build.results import BuildOutcome, CacheOutcome, CacheStatus, Status
from ci_tools.catalog import variants
from ci_tools.catalog.variants import Variant
from ci_tools.commands import _fleet, _results, _sbom
from ci_tools.commands._common import add_branch_option, add_catalog_option, default_branch, load
from ci_tools.plan.binarycache import BinaryCache


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "variants",
        nargs="+",
        metavar="VARIANT",
        help="variants to build; a stack builds base first",
    )
    add_branch_option(parser)
    _results.add_record_options(parser)
    _fleet.add_runners_option(parser)
    add_catalog_option(parser)


def describe(name: str, outcome: BuildOutcome) -> str:
    parts = [f"{outcome.status:<7}", name]
    if outcome.status is not Status.SKIPPED:
        parts.append(format_minutes(outcome.seconds))
    if outcome.attempts > 1:
        parts.append(f"{outcome.attempts} attempts")
    if outcome.store_path:
        parts.append(outcome.store_path)
    if outcome.closure_bytes is not None:
        parts.append(f"closure {format_bytes(outcome.closure_bytes)}")
    if outcome.cache is not None:
        parts.append(f"{outcome.cache.status}: {outcome.cache.detail}")
    return "  ".join(parts)


def push(
    outcome: BuildOutcome, cache: BinaryCache | None, key: str, env: dict[str, str]
) -> BuildOutcome:
    """Sign and push a passed build's closure to the fleet's cache; the outcome says whether
    it got there."""
    if cache is None or outcome.status is not Status.PASSED or outcome.store_path is None:
        return outcome
    if not key:
        done = nixcache.Outcome(
            ok=False,
            attempts=0,
            detail=f"no signing key: the secret {cache.signing_key_secret} reached this job "
            f"empty ({_fleet.SIGNING_KEY_ENV})",
        )
    else:
        done = nixcache.push([outcome.store_path], cache.url, key, env=env)
    status = CacheStatus.PUSHED if done.ok else CacheStatus.NOT_PUSHED
    cached = CacheOutcome(status=status, url=cache.url, detail=done.detail, attempts=done.attempts)
    return replace(outcome, cache=cached)


def run(args: argparse.Namespace) -> int:
    catalog = load(args)
    cwd = Path.cwd()
    branch = args.branch or default_branch(catalog, cwd)
    chosen = [variants.find(catalog, branch, name) for name in dict.fromkeys(args.variants)]
    paths = {v.name: _results.record_paths(args, v.name, len(chosen)) for v in chosen}
    _results.check_writable([p for group in paths.values() for p in group])
    # The signing key goes to `nix store sign` alone, never to flox or what it builds.
    key = _fleet.signing_key()
    env = {k: v for k, v in os.environ.items() if k != _fleet.SIGNING_KEY_ENV}
    cache = _fleet.for_catalog(args, catalog, cwd).cache
    flox = proc.require("flox", env)
    commit, runner = _results.provenance(env, cwd)
    records = {v.name: _results.new_record(v, commit=commit, runner=runner) for v in chosen}
    not_pushed: list[str] = []

    def started(variant: Variant, outcome: BuildOutcome) -> None:
        _results.save(records[variant.name].with_build(outcome), paths[variant.name])

    def ended(variant: Variant, outcome: BuildOutcome) -> None:
        outcome = push(outcome, cache, key, env)
        if outcome.cache is not None and outcome.cache.status is CacheStatus.NOT_PUSHED:
            not_pushed.append(variant.name)
        print(describe(variant.name, outcome), flush=True)
        _results.save(records[variant.name].with_build(outcome), paths[variant.name])
        _sbom.write(variant.name, outcome, paths[variant.name], env)

    with _results.reserved([p for group in paths.values() for p in group]):
        outcomes = flox_build.build_variants(
            chosen, flox_build.Builder(flox=flox, cwd=cwd, env=env), on_start=started, on_end=ended
        )
    failed = any(outcome.status is not Status.PASSED for _, outcome in outcomes)
    # Not a failed build: the test leg that needs the path fails naming why, and a leg on
    # this runner (or a re-run after the cache is back) can still use it.
    for name in not_pushed:
        ghoutput.warning(
            f"built, not pushed: {name}: a test leg on another runner cannot substitute it", env
        )
    return EXIT_FAILED if failed else EXIT_OK
