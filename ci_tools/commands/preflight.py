"""`ci-tools preflight`: is this self-hosted runner fit to build (flox, Nix, free disk)?

One escaped `::error::` annotation per problem and exit 1 on any; 0 when all is in order.
`--runner-dir DIR` also checks the Actions runner configured in DIR (2.327.1 or later,
`ci_tools.host.runner_version`). A maintainer passes it on the host, setting the runner up:
a job cannot check it, since a runner too old for the pinned actions fails at "Set up job",
before any step (this preflight included).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ci_tools.base import escape, proc
from ci_tools.base.errors import EXIT_FAILED, EXIT_OK, InputError, escape_data
from ci_tools.build import runner_check
from ci_tools.catalog.layout import RUNNERS
from ci_tools.host import runner_version


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
    parser.add_argument(
        "--runner-dir",
        type=Path,
        metavar="DIR",
        help=f"also check the Actions runner configured in DIR (>= {runner_version.LEAST_TEXT}); "
        "run on the host: a job on a runner too old fails before any step",
    )


def run(args: argparse.Namespace) -> int:
    inventory: Path | None = args.inventory
    if inventory is None and Path(RUNNERS).is_file():
        inventory = Path(RUNNERS)
    program = _listener(args.runner_dir)
    need = runner_check.requirements(inventory, str(inventory), args.store)
    problems = runner_check.check(need, runner_check.Host(), print)
    runner = _runner_problem(program) if program is not None else None
    problems += [runner] if runner is not None else []
    for problem in problems:
        escape.write_command(sys.stdout, f"::error::{escape_data(problem)}")
    if not problems:
        also = ", free disk and the Actions runner" if program is not None else " and free disk"
        print(f"preflight: flox, Nix{also} are in order")
    return EXIT_FAILED if problems else EXIT_OK


def _listener(runner_dir: Path | None) -> Path | None:
    """The runner's listener in `--runner-dir`; a folder without one is bad input (exit 2)."""
    if runner_dir is None:
        return None
    program = runner_version.listener(runner_dir)
    if not program.is_file():
        raise InputError(
            f"--runner-dir {runner_dir}: no bin/Runner.Listener there; pass the folder the "
            "Actions runner was configured in (where config.sh and .runner are)"
        )
    return program


def _runner_problem(program: Path) -> str | None:
    done = proc.run([str(program), "--version"], timeout=60)
    if done.timed_out:
        return f"{program} --version did not end within 60 s"
    return runner_version.problem(done.stdout, done.returncode, program)
