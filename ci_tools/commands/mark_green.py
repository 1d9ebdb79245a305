"""`ci-tools mark-green`: record a stack's input fingerprint as green (`plan.statuses`).

One stack, in a checkout of the built commit, with the matrix entry's `name`, `fingerprint`
and (optionally) `packages`, and the stack's records:

    ci-tools mark-green --stack NAME --fingerprint KIND-HEX --results DIR [--branch B] [PACKAGE ...]

A stack is marked only when every record in DIR proves its variant as the publish policy
(`build/policy.py`) asks: a check that ran, or where the fleet cannot run it, the static
proofs; never a stack whose checks proved nothing (exit 1, nothing written). Every record of
a variant counts (a failed one beside a passing copy refuses it), and only a record of the
checked-out commit proves anything (`_green.unproven`).

Before writing it checks what it records (exit 2 otherwise, nothing written): the entry must
be one the matrix makes for the branch, and the fingerprint must be its current one at the
checked-out commit, of the same kind (`plan.recompute`).

Where: `--commit`, else, on a pull request, the pull request's head commit (from the event
payload: GitHub's merge commit, which the run checks out, is reached by no later run), else
GITHUB_SHA. Needs GITHUB_TOKEN (or GH_TOKEN) with `statuses: write` and GITHUB_REPOSITORY;
honours GITHUB_API_URL. Where the token is read-only (a fork's or Dependabot's pull request)
it writes nothing and says so; where GitHub refuses or fails, too: exit 0 with a notice, since
a green not recorded costs a later rebuild and must not fail a job whose stack built and
passed.
One request, retried within `POLICY`'s bounds (under a minute), and never past a rate
limit's reset: nothing waits an hour for GITHUB_TOKEN's 1,000 requests an hour.

The shard form marks each entry of a shard that its records prove, in one process
(`_green_shard`); what it cannot mark is a notice, never a failure:

    ci-tools mark-green --shard FILE --results-root DIR [--commit SHA] [--record OUT]

With `--record OUT` it writes each proven entry's green to OUT/<stack>.green instead of a
commit status (no request), and the run's last job publishes them all in aggregate, one check
run per 1,985 stacks, within GitHub's API limits at any size (`_green_publish`):

    ci-tools mark-green --publish DIR --planned FILE [--planned FILE ...] [--commit SHA]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base import ghevent, ghoutput
from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.retry import RetryPolicy
from ci_tools.commands import _common, _green, _planning
from ci_tools.plan import kinds, statuses

if TYPE_CHECKING:
    from ci_tools.build.smoke.expect import Expectations
    from ci_tools.plan.matrix import Entry

POLICY = RetryPolicy(attempts=3, total_seconds=60.0, initial_seconds=2.0, max_seconds=20.0)


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument("--stack", metavar="NAME", help="the matrix entry's name")
    parser.add_argument(
        "--fingerprint",
        metavar="KIND-HEX",
        help="the matrix entry's fingerprint; checked against the entry's current one",
    )
    parser.add_argument(
        "packages",
        nargs="*",
        metavar="PACKAGE",
        help="the entry's packages, in the matrix's order (default: the branch's whole stack)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="the stack's result records: each must prove its variant (the publish policy)",
    )
    parser.add_argument(
        "--shard",
        type=Path,
        metavar="FILE",
        help='instead of --stack: mark each entry of this matrix shard ({"include": [...]}, '
        "as `ci-tools matrix` writes it) that its records prove; the others get a notice",
    )
    parser.add_argument(
        "--results-root",
        type=Path,
        metavar="DIR",
        help="with --shard: the records of each entry in DIR/results-<entry name>/ (the "
        "run's results-* artifacts, downloaded one folder each)",
    )
    _aggregate_options(parser)
    parser.add_argument(
        "--commit",
        metavar="SHA",
        help="the commit to record it on (default: a pull request's head commit, from the "
        "event; else $GITHUB_SHA)",
    )
    _planning.add_branch_option(parser)
    _planning.add_ignore_option(parser)
    _planning.add_runners_option(parser)


def _aggregate_options(parser: argparse.ArgumentParser) -> None:
    """The aggregate greens' forms (`_green_publish`)."""
    parser.add_argument(
        "--record",
        type=Path,
        metavar="OUT",
        help="with --shard: write each proven entry's green to OUT/<stack>.green for "
        "--publish, instead of a commit status",
    )
    parser.add_argument(
        "--publish",
        type=Path,
        metavar="DIR",
        help="publish the *.green files under DIR (the run's green-* artifacts) in aggregate: "
        "one check run per 1,985 stacks; each must be planned with its fingerprint (--planned)",
    )
    parser.add_argument(
        "--planned",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="with --publish: one of the plan's matrices (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    env = os.environ
    _check_form(args)
    if args.publish is not None:
        from ci_tools.commands import _green_publish

        return _green_publish.run(args, env)
    if args.shard is not None:
        from ci_tools.commands import _green_shard

        return _green_shard.run(args, env)
    kind = _check_arguments(args)
    commit = _green.commit(args.commit, env)
    read_only = ghevent.read_only_reason(env)
    if read_only is not None:
        ghoutput.notice(
            f"mark-green: {statuses.context(args.stack)} not recorded: {read_only}; the next "
            "trusted run builds it again",
            env,
        )
        return 0
    entry, branch = _check_current(args, env, kind)
    head = _green.checked_out(Path.cwd())
    expected = _green.expectations(args, branch, entry.packages)
    _require_proof(args.results, entry.packages, entry.placement.test.value, head, expected)
    from ci_tools.base import github_api

    settings = github_api.settings_from_env(env)
    api = github_api.connect_lazy(settings, POLICY, lambda line: ghoutput.notice(line, env))
    refused = statuses.mark_green(
        api,
        commit=commit,
        stack=args.stack,
        fingerprint=args.fingerprint,
        target_url=_green.run_url(env),
    )
    if refused is not None:
        ghoutput.notice(f"mark-green: {settings.redact(refused)}", env)
        return 0
    print(
        f"ci-tools: {statuses.context(args.stack)} is green at {commit[:12]}: "
        f"{statuses.description(args.fingerprint)}"
    )
    return 0


def _require_proof(
    folder: Path,
    packages: Sequence[str],
    scope: str,
    head: str,
    expected: Mapping[str, Expectations],
) -> None:
    """FailedError (exit 1) unless `folder`'s records prove each of the stack's packages at
    the checked-out commit `head`, with the checks the catalog expects (`expected`)."""
    missing = _green.unproven(folder, packages, scope, head, expected)
    if missing:
        raise FailedError("not marked green: " + "; ".join(missing))


def _check_form(args: argparse.Namespace) -> None:
    """One stack (--stack, --fingerprint, --results) or one shard (--shard, --results-root)."""
    one = {"--stack": args.stack, "--fingerprint": args.fingerprint, "--results": args.results}
    if args.publish is not None:
        extra = [n for n, v in {**one, "--shard": args.shard, "--record": args.record}.items() if v]
        if extra or args.packages:
            raise InputError(f"--publish takes --planned and --commit only: leave out {extra}")
        return
    if args.planned:
        raise InputError("--planned goes with --publish DIR")
    if args.record is not None and args.shard is None:
        raise InputError("--record OUT goes with --shard FILE")
    if args.shard is not None:
        given = [name for name, value in one.items() if value is not None]
        if args.packages:
            given.append("PACKAGE")
        if given:
            raise InputError(
                f"--shard marks the shard's entries: leave out {', '.join(given)} (they are "
                "the one-stack form's)"
            )
        if args.results_root is None:
            raise InputError("--shard needs --results-root DIR, the folder of its records")
        return
    if args.results_root is not None:
        raise InputError("--results-root goes with --shard FILE")
    missing = [name for name, value in one.items() if value is None]
    if missing:
        raise InputError(
            f"mark-green needs {', '.join(missing)}: --stack NAME --fingerprint KIND-HEX "
            "--results DIR marks one stack; --shard FILE --results-root DIR marks a shard"
        )


def _check_arguments(args: argparse.Namespace) -> kinds.FingerprintKind:
    for problem in (
        statuses.check_stack(args.stack),
        statuses.check_fingerprint(args.fingerprint),
    ):
        if problem is not None:
            raise InputError(problem)
    kind = kinds.kind_of(args.fingerprint)
    assert kind is not None  # checked above
    return kind


def _check_current(
    args: argparse.Namespace, env: Mapping[str, str], kind: kinds.FingerprintKind
) -> tuple[Entry, str]:
    """Exit 2 unless the fingerprint is the entry's current one at the checked-out commit;
    the entry and its branch."""
    from ci_tools.plan.checkout import Checkout
    from ci_tools.plan.recompute import current_fingerprint, find_entry

    cwd = Path.cwd()
    checkout = Checkout(root=cwd)
    source = _planning.variants(args, env, checkout)
    inventory = _planning.inventory(args.runners, cwd, source.sms, source.cpu_flags)
    entry = find_entry(source, inventory, args.stack, args.packages)
    current = current_fingerprint(checkout, source, entry, kind)
    if current != args.fingerprint:
        raise InputError(
            f"--fingerprint {args.fingerprint} is not the current fingerprint of {args.stack} "
            f"at this commit ({current}): nothing recorded. A matrix planned at another "
            "commit, or a Nix whose `nix-instantiate --parse` prints differently from the "
            "plan job's, gives another fingerprint"
        )
    return entry, source.branch
