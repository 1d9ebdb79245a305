"""`ci-tools publish VARIANT... --org ORG [--results DIR] [--dry-run] [--branch B]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ci_tools.commands import _common, _fleet
from ci_tools.commands._results import DEFAULT_RESULTS


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument("variants", nargs="+", metavar="VARIANT", help="variants to publish")
    parser.add_argument("--org", required=True, help="the Flox organisation to publish to")
    parser.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        metavar="DIR",
        help="folder of result records, DIR/<variant>.result.json (default: "
        f"{DEFAULT_RESULTS}, where `ci-tools build` and `test` write them)",
    )
    _common.add_branch_option(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="print the commands; publish and write nothing"
    )
    _fleet.add_runners_option(parser)


def run(args: argparse.Namespace) -> int:
    from ci_tools.base.retry import RetryPolicy
    from ci_tools.build.smoke.expect import expectations_for
    from ci_tools.catalog import variants
    from ci_tools.ship import publish

    publish.validate_org(args.org)
    catalog = _common.load(args)
    cwd = Path.cwd()
    branch = args.branch or _common.default_branch(catalog, cwd)
    chosen = [variants.find(catalog, branch, name) for name in args.variants]
    # What the fleet can do for each variant, from runners.yaml as it is now: a record is
    # judged by the bar its route sets, not by one it names itself.
    fleet = _fleet.for_catalog(args, catalog, cwd)
    publish.run(
        args.variants,
        org=args.org,
        results_dir=args.results,
        cwd=cwd,
        dry_run=args.dry_run,
        branch=branch,
        scopes={v.name: _fleet.route(fleet, v).scope for v in chosen},
        expected={v.name: expectations_for(v) for v in chosen},
        policy=RetryPolicy(attempts=4, total_seconds=1800, initial_seconds=30, max_seconds=300),
        say=lambda line: print(line, flush=True, file=sys.stdout),
    )
    return 0
