"""`ci-tools matrix`: print the GitHub Actions build matrix, `{"include": [...]}`, as JSON.

Variants come from the catalog, or, in a checkout with `.flox/pkgs/*.nix` and no catalog,
from the recipe files (`plan.source`). With `--fingerprints`, `--since`, `--until-green` or
`--github-output` (the workflow's call: its build legs record the fingerprint when they pass)
each entry carries its stack's input fingerprint (`fingerprint`), and `--until-green` or
`--since REF` keep the stacks that need a build (`plan.schedule`); without them the entries
have no `fingerprint` and neither git nor Nix is asked more than the branch needs. The runner inventory (`runners.yaml`, optional) says where each entry
builds and what its test can check. stdout is the matrix, one entry per line;
`--github-output` also writes it compact to `$GITHUB_OUTPUT`, sharded by 256 entries, at
most what one run can take (`--max-shards` matrices, within GitHub's 1 MB of outputs per
job): the rest wait for the next run, named in a notice. Each fingerprint names its kind
(`nix-...`: Nix's parse, `raw-...`: raw bytes; `--fingerprint-kind`), and the outputs say
which kind the plan computed (`fingerprint-kind`).
This path must stay light: no jinja2, no PyGithub (a test holds it to that).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base.errors import InputError
from ci_tools.catalog.model import Platform
from ci_tools.catalog.yamlsrc import did_you_mean
from ci_tools.commands import _common, _planning
from ci_tools.plan import matrix, source
from ci_tools.plan import status_defaults as statuses_defaults
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.kinds import FingerprintKind
from ci_tools.plan.matrix import Group, Selection

if TYPE_CHECKING:
    from ci_tools.plan.nixinputs import NixReader

MAX_SHARDS = 64


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    _planning.add_branch_option(parser)
    _selection_options(parser)
    _schedule_options(parser)
    _planning.add_ignore_option(parser)
    _output_options(parser)
    _planning.add_runners_option(parser)


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
    parser.add_argument(
        "--trusted-creator",
        action="append",
        default=[],
        type=_login,
        metavar="LOGIN",
        help="--until-green counts only statuses created by this GitHub login (repeatable; "
        f"default: {', '.join(statuses_defaults.DEFAULT_TRUSTED)}, the identity of the "
        "workflow's GITHUB_TOKEN); name the app or user your workflow records greens as",
    )
    parser.add_argument(
        "--fingerprint-kind",
        choices=[k.value for k in FingerprintKind],
        default=None,
        help="nix: from Nix's parse (nix-instantiate must be on PATH, else exit 2); raw: from "
        "the raw bytes; greens of one kind are never compared with the other (default: nix "
        "where nix-instantiate is installed, else raw)",
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
        help=f"most shards of {matrix.SHARD_SIZE} entries the workflow consumes; with "
        "--github-output what does not fit (nor in GitHub's 1 MB of outputs per job) waits "
        f"for the next run (default: {matrix.DEFAULT_MAX_SHARDS})",
    )


def _login(text: str) -> str:
    why = statuses_defaults.check_login(text)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
    return text


def run(args: argparse.Namespace) -> int:
    env = os.environ
    cwd = Path.cwd()
    output = _output_path(env) if args.github_output else None
    checkout = Checkout(root=cwd)
    workflow = args.fingerprints or args.github_output or args.until_green or args.since is not None
    reader: NixReader | None = None
    if workflow:
        # Imported here: fingerprints and $GITHUB_OUTPUT's shards are the workflow's, not
        # those of a person's look at what a branch builds. Nix starts on HEAD's files
        # now, and parses them while the catalog loads.
        from ci_tools.commands import _matrix_workflow

        reader = _matrix_workflow.read_ahead(args, checkout)
    try:
        variants = _planning.variants(args, env, checkout)
        inventory = _planning.inventory(args.runners, cwd, variants.sms, variants.cpu_flags)
        planned = matrix.plan(
            variants.targets,
            _selection(args, variants),
            inventory,
            branch=variants.branch,
            group=Group(args.group),
        )
        if workflow:
            entries, why_empty, kind = _matrix_workflow.scheduled(
                args, planned, variants, checkout, env, reader
            )
        else:
            entries, why_empty, kind = list(planned), "", None
    finally:
        if reader is not None:  # bad input, Ctrl-C, SIGTERM: Nix stopped, its files removed
            reader.close()
    if not entries:
        from ci_tools.base import ghoutput

        ghoutput.notice(why_empty if planned else source.empty_reason(variants), env)
    if output is not None:  # --github-output: `_matrix_workflow` is imported above
        entries = _matrix_workflow.write_outputs(output, entries, args, kind, env)
    sys.stdout.write(matrix.matrix_text(matrix.rows(entries)))
    return 0


def _output_path(env: Mapping[str, str]) -> Path:
    """$GITHUB_OUTPUT, checked before any work (`--github-output`)."""
    from ci_tools.base import ghoutput

    return ghoutput.output_path(env)


def _selection(args: argparse.Namespace, variants: source.Source) -> Selection:
    known = variants.packages
    names = [t.name for t in variants.targets]
    for glob in args.select:
        # A glob that matches nothing is a typo, not "nothing to do": a green run that
        # built nothing would hide it (a release dispatched with it published nothing).
        if not any(fnmatch.fnmatchcase(name, glob) for name in names):
            raise InputError(
                f'--select "{glob}" matches none of the {len(names)} variants of branch '
                f"{variants.branch}{did_you_mean(glob, set(names))}; a glob is matched against "
                "whole variant names (fnmatch: *, ?, [...]), e.g. 'pytorch-*-sm90-*'"
            )
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
