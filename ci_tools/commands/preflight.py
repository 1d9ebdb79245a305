"""`ci-tools preflight`: is this self-hosted runner fit to build (flox, Nix, free disk)?

One escaped `::error::` annotation per problem and exit 1 on any; 0 when all is in order.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ci_tools.base import escape
from ci_tools.base.errors import EXIT_FAILED, EXIT_OK, escape_data
from ci_tools.build import runner_check
from ci_tools.catalog.layout import RUNNERS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--inventory",
        type=Path,
        metavar="FILE",
        help=f"the runner inventory whose `preflight` section to check against "
        f"(default: {RUNNERS} here if there is one, else the defaults: flox "
        f"{runner_check.DEFAULT_FLOX}, {runner_check.DEFAULT_MIN_FREE_GB} GiB free)",
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=runner_check.DEFAULT_STORE,
        metavar="DIR",
        help=f"where the Nix store lives, whose disk is measured (default: "
        f"{runner_check.DEFAULT_STORE})",
    )


def run(args: argparse.Namespace) -> int:
    inventory: Path | None = args.inventory
    if inventory is None and Path(RUNNERS).is_file():
        inventory = Path(RUNNERS)
    need = runner_check.requirements(inventory, str(inventory), args.store)
    problems = runner_check.check(need, runner_check.Host(), print)
    for problem in problems:
        escape.write_command(sys.stdout, f"::error::{escape_data(problem)}")
    if not problems:
        print("preflight: flox, Nix and free disk are in order")
    return EXIT_FAILED if problems else EXIT_OK
