"""`ci-tools test VARIANT`: run the smoke checks inside the variant's own interpreter.

A test leg on another runner than the build's takes the build from the fleet's binary cache
(`--substitute`: the store path its build record names, signed by the cache's keys, never
built here); a leg the matrix routes `static` proves it from its files alone (`--static`).
The record says where the checks ran and what the fleet could do for the variant."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import digits
from ci_tools.base.errors import EXIT_FAILED, EXIT_OK, printable
from ci_tools.build import flox_build
from ci_tools.build.report import format_bytes
from ci_tools.build.results import Check, Figures, Route, Status, TestOutcome, test_status
from ci_tools.build.smoke import closure, runner
from ci_tools.build.smoke.expect import expectations_for
from ci_tools.catalog import variants
from ci_tools.commands import _fleet, _results, _substitute
from ci_tools.commands._common import add_branch_option, add_catalog_option, default_branch, load
from ci_tools.host import hostcpu


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", metavar="VARIANT", help="the variant to check")
    add_branch_option(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--result",
        type=Path,
        metavar="DIR",
        help=(
            "the build result to check (default: ./result-VARIANT); its bin/python3, or else "
            "the Python of its Nix closure with the closure's site-packages, runs the checks"
        ),
    )
    where.add_argument(
        "--python", metavar="PATH", help="any interpreter that has the build on its path"
    )
    where.add_argument(
        "--substitute",
        action="store_true",
        help="take the build from the fleet's binary cache (runners.yaml cache): the store "
        "path its record in --results names, never built here; links ./result-VARIANT to it",
    )
    parser.add_argument(
        "--static",
        action="store_true",
        help="run none of the build's code: only the proofs read from its files (SASS, the "
        "ISA's instructions), as a leg the matrix routes `static` does",
    )
    parser.add_argument(
        "--import-runs",
        type=_import_runs,
        default=runner.IMPORT_RUNS,
        metavar="N",
        help=f"time `import torch` in N fresh interpreters, 0 to {MAX_IMPORT_RUNS}; the record "
        f"keeps the median (default {runner.IMPORT_RUNS})",
    )
    _results.add_record_options(parser)
    _fleet.add_runners_option(parser)
    add_catalog_option(parser)


MAX_IMPORT_RUNS = 50


def _import_runs(text: str) -> int:
    runs = digits.whole(text, max_digits=4, high=MAX_IMPORT_RUNS)
    if runs is None:
        raise argparse.ArgumentTypeError(
            f"{printable(digits.shown(text))!r}: give a whole number from 0 to {MAX_IMPORT_RUNS}"
        )
    return runs


def format_check(check: Check) -> str:
    return f"{check.status:<7}  {check.name:<19}  {check.detail}"


def describe_figures(figures: Figures) -> list[str]:
    lines = [f"size     {lib.name:<19}  {format_bytes(lib.bytes)}" for lib in figures.libraries]
    if figures.import_seconds is not None:
        lines.append(
            f"time     {'import torch':<19}  {figures.import_seconds:.3f} s "
            f"(median of {figures.import_runs} fresh interpreters)"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    catalog = load(args)
    cwd = Path.cwd()
    branch = args.branch or default_branch(catalog, cwd)
    variant = variants.find(catalog, branch, args.variant)
    paths = _results.record_paths(args, variant.name, 1)
    _results.check_writable(paths)
    env = dict(os.environ)
    fleet = _fleet.for_catalog(args, catalog, cwd)
    context = _Context(
        paths=paths,
        variant=variant,
        env=env,
        cwd=cwd,
        route=_fleet.route(fleet, variant),
        runner=_results.runner_name(env),
    )
    if args.python is not None:
        python = runner.resolve_python(args.python, env)
        return _check(args, context, python, named=True)
    result_dir = args.result or flox_build.result_link(cwd, variant.name)
    if args.substitute:
        got = _substitute.build_of(paths, variant.name, fleet.cache, result_dir, env)
        if got.skip:
            print(got.reason)
            return EXIT_OK
        if got.failure is not None:
            return _record_failed(context, got.failure)
    try:
        launch = closure.interpreter_in(result_dir, variant.name, variant.python)
    except closure.NoInterpreterError as exc:
        return _record_failed(
            context, Check(name="interpreter", status=Status.FAILED, detail=str(exc))
        )
    python = launch.python
    env.update(launch.env)
    return _check(args, context, python)


@dataclass(frozen=True, kw_only=True)
class _Context:
    paths: list[Path]
    variant: variants.Variant
    env: dict[str, str]
    cwd: Path
    route: Route
    runner: str


def _check(args: argparse.Namespace, context: _Context, python: str, *, named: bool = False) -> int:
    """`named`: the interpreter is one a person named (--python), which must be the
    variant's Python; a build's own is the build's, and its checks say what it is."""
    variant = context.variant
    record = _results.existing_or_new(context.paths, variant, context.env, context.cwd)
    smoke = runner.smoke_test(
        expectations_for(variant),
        python,
        host_platform=hostcpu.host_platform(),
        host_flags=hostcpu.read_cpu_flags(),
        env=context.env,
        import_runs=args.import_runs,
        static=args.static,
        python_version=variant.python if named else None,
    )
    if smoke.interpreter is not None:
        print(
            f"testing {variant.name} (branch {variant.branch.name}) with {smoke.interpreter.path} "
            f"(Python {smoke.interpreter.python}, torch from {smoke.interpreter.torch_origin})"
        )
    else:
        print(f"testing {variant.name} (branch {variant.branch.name}): not run on this host")
    for check in smoke.checks:
        print(format_check(check))
    if smoke.figures is not None:
        for line in describe_figures(smoke.figures):
            print(line)
    outcome = TestOutcome(
        status=test_status(smoke.checks),
        checks=smoke.checks,
        figures=smoke.figures,
        runner=context.runner,
        route=context.route,
    )
    _summarise(variant.name, outcome)
    _results.save(record.with_test(outcome), context.paths)
    return EXIT_FAILED if outcome.status is Status.FAILED else EXIT_OK


def _summarise(name: str, outcome: TestOutcome) -> None:
    counts = {s: sum(c.status is s for c in outcome.checks) for s in Status}
    print(
        f"{outcome.status}: {name}: {counts[Status.PASSED]} passed, "
        f"{counts[Status.STATIC]} static, {counts[Status.FAILED]} failed, "
        f"{counts[Status.SKIPPED]} skipped"
    )


def _record_failed(context: _Context, check: Check) -> int:
    """The build cannot be tested here: its test failed, and the record says why."""
    print(format_check(check))
    outcome = TestOutcome(
        status=Status.FAILED, checks=(check,), runner=context.runner, route=context.route
    )
    _summarise(context.variant.name, outcome)
    record = _results.existing_or_new(context.paths, context.variant, context.env, context.cwd)
    _results.save(record.with_test(outcome), context.paths)
    return EXIT_FAILED
