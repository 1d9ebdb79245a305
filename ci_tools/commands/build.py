"""`ci-tools build VARIANT...`: run `flox build` for each variant and record the outcome."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ci_tools.base import proc
from ci_tools.base.errors import EXIT_FAILED, EXIT_OK
from ci_tools.build import flox_build
from ci_tools.build.report import format_bytes, format_minutes
from ci_tools.build.results import BuildOutcome, Status
from ci_tools.catalog import variants
from ci_tools.catalog.variants import Variant
from ci_tools.commands import _results
from ci_tools.commands._common import add_branch_option, add_catalog_option, default_branch, load


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "variants",
        nargs="+",
        metavar="VARIANT",
        help="variants to build; a stack builds base first",
    )
    add_branch_option(parser)
    _results.add_record_options(parser)
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
    return "  ".join(parts)


def run(args: argparse.Namespace) -> int:
    catalog = load(args)
    cwd = Path.cwd()
    branch = args.branch or default_branch(catalog, cwd)
    chosen = [variants.find(catalog, branch, name) for name in dict.fromkeys(args.variants)]
    paths = {v.name: _results.record_paths(args, v.name, len(chosen)) for v in chosen}
    _results.check_writable([p for group in paths.values() for p in group])
    env = dict(os.environ)
    flox = proc.require("flox", env)
    commit, runner = _results.provenance(env, cwd)
    records = {v.name: _results.new_record(v, commit=commit, runner=runner) for v in chosen}

    def started(variant: Variant, outcome: BuildOutcome) -> None:
        _results.save(records[variant.name].with_build(outcome), paths[variant.name])

    def ended(variant: Variant, outcome: BuildOutcome) -> None:
        print(describe(variant.name, outcome), flush=True)
        _results.save(records[variant.name].with_build(outcome), paths[variant.name])

    with _results.reserved([p for group in paths.values() for p in group]):
        outcomes = flox_build.build_variants(
            chosen, flox_build.Builder(flox=flox, cwd=cwd, env=env), on_start=started, on_end=ended
        )
    failed = any(outcome.status is not Status.PASSED for _, outcome in outcomes)
    return EXIT_FAILED if failed else EXIT_OK
