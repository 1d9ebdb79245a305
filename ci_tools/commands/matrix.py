"""`ci-tools matrix`: print the GitHub Actions build matrix, `{"include": [...]}`, as JSON.

Variants come from the catalog, or, in a checkout with `.flox/pkgs/*.nix` and no catalog,
from the recipe files (`plan.source`). With `--fingerprints`, `--since`, `--until-green` or
`--github-output` (the workflow's call: its build legs record the fingerprint when they pass)
each entry carries its stack's input fingerprint (`fingerprint`), and `--until-green` or
`--since REF` keep the stacks that need a build (`plan.schedule`); without them the entries
have no `fingerprint` and neither git nor Nix is asked more than the branch needs. The runner inventory (`runners.yaml`, optional) says where each entry
builds and what its test can check. stdout is the matrix, one entry per line;
`--github-output` also writes it compact to `$GITHUB_OUTPUT`, sharded by 256 entries.
This path must stay light: no jinja2, no PyGithub (a test holds it to that).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ci_tools.base import ghoutput
from ci_tools.base.errors import InputError
from ci_tools.catalog import layout
from ci_tools.catalog.model import Platform
from ci_tools.catalog.yamlsrc import did_you_mean
from ci_tools.commands import _common
from ci_tools.plan import matrix, source
from ci_tools.plan import statuses as statuses_defaults
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.matrix import Entry, Group, Selection
from ci_tools.plan.runners import find_inventory

MAX_SHARDS = 64


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument(
        "--branch",
        metavar="B",
        type=_common.branch_name,
        help="the catalog branch (default: the current git branch if the catalog has it, "
        "else main); without a catalog, only the entries' branch field",
    )
    _selection_options(parser)
    _schedule_options(parser)
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="NAME",
        help=f"without a catalog: a file or folder directly under {layout.PKGS_DIR}/ (by name, "
        "without .nix) that is not a variant (repeatable)",
    )
    _output_options(parser)
    parser.add_argument(
        "--runners",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the runner inventory (default: {layout.RUNNERS} in the current directory if "
        "present, else one pool per platform with the default labels)",
    )


def _selection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--group",
        choices=[g.value for g in Group],
        default=Group.STACK.value,
        help="stack: one entry per stack (pytorch-X, then torchvision-X ...); "
        "none: one entry per package (default: stack)",
    )
    parser.add_argument(
        "--package", action="append", default=[], metavar="P", help="only this package (repeatable)"
    )
    parser.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="GLOB",
        help="only variants whose name matches this fnmatch glob (repeatable)",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out variants whose name matches this glob (repeatable)",
    )
    parser.add_argument(
        "--platform",
        action="append",
        default=[],
        choices=[p.value for p in Platform],
        help="only this platform (repeatable)",
    )


def _schedule_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--since",
        metavar="REF",
        help="only stacks whose input fingerprint differs between REF and HEAD (an unknown "
        "REF: everything); with --until-green, the fallback when there is no GitHub token",
    )
    parser.add_argument(
        "--until-green",
        action="store_true",
        help="only stacks whose input fingerprint no recent commit of the branch records as "
        "green (commit statuses; needs GITHUB_TOKEN and GITHUB_REPOSITORY, honours "
        "GITHUB_API_URL); without a token: --since REF, or everything, with a notice",
    )
    parser.add_argument(
        "--lookback",
        # Bounded: each commit may cost an API call against the plan job's rate limit.
        type=_common.bounded_int(1, 1000),
        default=statuses_defaults.DEFAULT_COMMITS,
        metavar="N",
        help="--until-green reads the statuses of at most N commits HEAD reaches, newest first "
        f"(default: {statuses_defaults.DEFAULT_COMMITS})",
    )
    parser.add_argument(
        "--max-api-calls",
        type=_common.bounded_int(1, 5000),
        default=statuses_defaults.DEFAULT_MAX_CALLS,
        metavar="N",
        help="--until-green makes at most N status requests; stacks not answered within them "
        f"are scheduled (default: {statuses_defaults.DEFAULT_MAX_CALLS})",
    )


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fingerprints",
        action="store_true",
        help="give each entry its stack's input fingerprint, and warn about references to "
        "missing files (implied by --since, --until-green and --github-output)",
    )
    parser.add_argument(
        "--github-output",
        action="store_true",
        help="also write count, shards and matrix-0 ... matrix-3 to $GITHUB_OUTPUT",
    )
    parser.add_argument(
        "--max-shards",
        # Bounded: each shard is a job output the workflow must consume (10**7 never ended).
        type=_common.bounded_int(1, MAX_SHARDS),
        default=matrix.DEFAULT_MAX_SHARDS,
        metavar="N",
        help=f"most shards of {matrix.SHARD_SIZE} entries the workflow consumes (default: "
        f"{matrix.DEFAULT_MAX_SHARDS})",
    )


def run(args: argparse.Namespace) -> int:
    env = os.environ
    cwd = Path.cwd()
    output = ghoutput.output_path(env) if args.github_output else None
    checkout = Checkout(root=cwd)
    variants = _variants(args, env, checkout)
    inventory = find_inventory(args.runners, cwd, variants.sms, variants.cpu_flags)
    planned = matrix.plan(
        variants.targets,
        _selection(args, variants.packages),
        inventory,
        branch=variants.branch,
        group=Group(args.group),
    )
    entries, why_empty = (
        _scheduled(args, planned, variants, checkout, env)
        if args.fingerprints or args.github_output or args.until_green or args.since is not None
        else (list(planned), "")
    )
    if not entries:
        ghoutput.notice(why_empty if planned else source.empty_reason(variants), env)
    secret = inventory.cache.signing_key_secret if inventory.cache is not None else ""
    _write(entries, output, args.max_shards, env, secret)
    return 0


def _variants(
    args: argparse.Namespace, env: Mapping[str, str], checkout: Checkout
) -> source.Source:
    catalog_path = _common.catalog_path(args)
    if args.catalog is not None or catalog_path.is_file():
        return source.from_catalog(_common.load(args), catalog_path, args.branch, checkout, env)
    return source.discovered(checkout, ignore=args.ignore, branch=args.branch, env=env)


def _scheduled(
    args: argparse.Namespace,
    planned: Sequence[Entry],
    variants: source.Source,
    checkout: Checkout,
    env: Mapping[str, str],
) -> tuple[list[Entry], str]:
    """The entries to build, each with its fingerprint, and, when none is left, why."""
    # Imported only here: fingerprints cost git reads and a Nix parse that a plain matrix
    # (a person's look at what a branch builds) never needs.
    from ci_tools.plan.schedule import Schedule, schedule_stacks

    schedule = Schedule(
        until_green=args.until_green,
        since=args.since,
        lookback=args.lookback,
        max_api_calls=args.max_api_calls,
    )
    stacks = {e.name: e.packages for e in planned}
    done = schedule_stacks(
        schedule, checkout, stacks, variants.head_facts(), variants.facts_at, env
    )
    entries = [
        replace(e, fingerprint=done.fingerprints[e.name])
        for e in planned
        if done.keep is None or e.name in done.keep
    ]
    return entries, done.why_empty


def _selection(args: argparse.Namespace, known: frozenset[str]) -> Selection:
    for package in args.package:
        if package not in known:
            raise InputError(
                f'--package "{package}" is unknown{did_you_mean(package, set(known))}; '
                f"known: {', '.join(sorted(known))}"
            )
    return Selection(
        packages=tuple(args.package),
        select=tuple(args.select),
        skip=tuple(args.skip),
        platforms=tuple(Platform(p) for p in args.platform),
    )


def _write(
    entries: Sequence[Entry],
    output: Path | None,
    max_shards: int,
    env: Mapping[str, str],
    cache_secret: str,
) -> None:
    """The matrix on stdout and, with --github-output, as step outputs."""
    matrix_rows = matrix.rows(entries)
    if output is not None:
        outputs = matrix.github_outputs(matrix_rows, max_shards, cache_secret)
        shards = int(outputs["shards"])
        if shards > 1:
            ghoutput.notice(
                f"{len(entries)} entries are more than GitHub's {matrix.SHARD_SIZE} per matrix: "
                f"split into {shards} shards (matrix-0 ... matrix-{shards - 1})",
                env,
            )
        ghoutput.append_outputs(output, outputs)
    sys.stdout.write(matrix.matrix_text(matrix_rows))
