"""`ci-tools matrix`: print the GitHub Actions build matrix, `{"include": [...]}`, as JSON.

Variants come from the catalog, or, in a checkout with `.flox/pkgs/*.nix` and no catalog,
from the recipe files (strictly: `discovery`). Each entry carries its stack's input
fingerprint (`fingerprint`); `--until-green` (commit statuses, `statuses`) or `--since REF`
(`changes`) keep the stacks that need a build. The runner inventory (`runners.yaml`, optional) says where each
entry builds and what its test can check. stdout is the matrix, one entry per line;
`--github-output` also writes it compact to `$GITHUB_OUTPUT`, sharded by 256 entries.
This path must stay light: no jinja2, no PyGithub (a test holds it to that).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ci_tools.base import ghoutput
from ci_tools.base.errors import InputError
from ci_tools.base.gitrepo import branch_from_env
from ci_tools.base.retry import RetryPolicy
from ci_tools.catalog import layout, names
from ci_tools.catalog.model import Platform
from ci_tools.catalog.yamlsrc import did_you_mean
from ci_tools.commands import _common
from ci_tools.plan import matrix
from ci_tools.plan import statuses as statuses_defaults
from ci_tools.plan.changes import Checkout, FactsAt, open_checkout, since
from ci_tools.plan.fingerprint import Fingerprinter, Fingerprints, Tree, build_facts
from ci_tools.plan.matrix import Group, Selection, Target
from ci_tools.plan.nixinputs import NixReader
from ci_tools.plan.runners import Inventory, default_inventory, load_inventory

# The status reads' retries: the plan job waits for GitHub at most this long in all.
POLICY = RetryPolicy(attempts=4, total_seconds=120.0)


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument(
        "--branch",
        metavar="B",
        type=_common.branch_name,
        help="the catalog branch (default: the current git branch if the catalog has it, "
        "else main); without a catalog, only the entries' branch field",
    )
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
        "--ignore",
        action="append",
        default=[],
        metavar="NAME",
        help=f"without a catalog: a file or folder directly under {layout.PKGS_DIR}/ (by name, "
        "without .nix) that is not a variant (repeatable)",
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
    parser.add_argument(
        "--runners",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the runner inventory (default: {layout.RUNNERS} in the current directory if "
        "present, else one pool per platform with the default labels)",
    )


MAX_SHARDS = 64


@dataclass(frozen=True, kw_only=True)
class _Source:
    targets: tuple[Target, ...]
    branch: str
    catalog_path: Path | None  # None: discovered from recipe file names
    packages: frozenset[str]  # every package the source knows, for --package
    sms: frozenset[str] | None  # the catalog's GPUs, for the inventory's test runners
    facts: Mapping[str, Hashable]  # variant name -> the catalog facts that reach its build
    facts_at: FactsAt  # the same at another commit


def run(args: argparse.Namespace) -> int:
    env = os.environ
    cwd = Path.cwd()
    output = ghoutput.output_path(env) if args.github_output else None
    checkout = open_checkout(cwd)
    head_tree = checkout.tree("HEAD", "HEAD")
    source = _source(args, cwd, env, checkout, head_tree)
    inventory = _inventory(args.runners, cwd, source.sms)
    for package in args.package:
        if package not in source.packages:
            raise InputError(
                f'--package "{package}" is unknown{did_you_mean(package, set(source.packages))}; '
                f"known: {', '.join(sorted(source.packages))}"
            )
    selection = Selection(
        packages=tuple(args.package),
        select=tuple(args.select),
        skip=tuple(args.skip),
        platforms=tuple(Platform(p) for p in args.platform),
    )
    planned = matrix.plan(
        source.targets, selection, inventory, branch=source.branch, group=Group(args.group)
    )
    stacks = {e.name: e.packages for e in planned}
    fingerprinter = Fingerprinter(NixReader())
    head = fingerprinter.stacks(head_tree, stacks, source.facts)
    for problem in head.problems:
        ghoutput.warning(problem, env)
    keep, why_empty = _schedule(args, checkout, source, stacks, head, fingerprinter, env)
    entries = [
        replace(e, fingerprint=head.by_stack[e.name])
        for e in planned
        if keep is None or e.name in keep
    ]
    if not entries:
        ghoutput.notice(why_empty if planned else _empty_reason(source), env)
    matrix_rows = matrix.rows(entries)
    if output is not None:
        outputs = matrix.github_outputs(matrix_rows, args.max_shards)
        shards = int(outputs["shards"])
        if shards > 1:
            ghoutput.notice(
                f"{len(entries)} entries are more than GitHub's {matrix.SHARD_SIZE} per matrix: "
                f"split into {shards} shards (matrix-0 ... matrix-{shards - 1})",
                env,
            )
        ghoutput.append_outputs(output, outputs)
    sys.stdout.write(matrix.matrix_text(matrix_rows))
    return 0


def _schedule(
    args: argparse.Namespace,
    checkout: Checkout,
    source: _Source,
    stacks: Mapping[str, tuple[str, ...]],
    head: Fingerprints,
    fingerprinter: Fingerprinter,
    env: Mapping[str, str],
) -> tuple[frozenset[str] | None, str]:
    """The stacks to build (None: all) and, for an empty result, why."""
    if args.until_green:
        green = _green(args, checkout, head, env)
        if green is not None:
            return frozenset(stacks) - green, (
                "the matrix is empty: every selected stack's inputs are green on a recent commit"
            )
    if args.since is None:
        return None, ""
    change_set = since(
        checkout,
        args.since,
        stacks=stacks,
        head=head,
        fingerprinter=fingerprinter,
        facts_at=source.facts_at,
    )
    if change_set.notice:
        ghoutput.notice(change_set.notice, env)
    return change_set.stacks, (
        f"the matrix is empty: no selected stack's inputs changed since {args.since}"
    )


def _green(
    args: argparse.Namespace, checkout: Checkout, head: Fingerprints, env: Mapping[str, str]
) -> frozenset[str] | None:
    """The stacks whose current fingerprint is green; None: unknown (then --since decides)."""
    fallback = f"--since {args.since}" if args.since is not None else "the full matrix"
    if not any(env.get(v, "").strip() for v in ("GITHUB_TOKEN", "GH_TOKEN")):
        ghoutput.notice(
            "--until-green: no GitHub token (GITHUB_TOKEN / GH_TOKEN; a fork's pull request or a "
            f"local run), so green records cannot be read: scheduling by {fallback}",
            env,
        )
        return None
    if checkout.git is None:
        ghoutput.notice(
            f"--until-green: {checkout.root} is not a git checkout with commits: scheduling by "
            f"{fallback}",
            env,
        )
        return None
    # Imported only here: `ci-tools matrix` without --until-green never loads PyGithub.
    from ci_tools.base import github_api
    from ci_tools.base.errors import CiToolsError
    from ci_tools.plan import statuses

    try:
        settings = github_api.settings_from_env(env)
        api = github_api.connect_lazy(
            settings,
            POLICY,
            lambda line: ghoutput.notice(line, env),
            per_page=statuses.PER_PAGE,
        )
        commits = checkout.git.recent_commits("HEAD", args.lookback)
        lookup = statuses.find_green(api, commits, head.by_stack, max_calls=args.max_api_calls)
    except CiToolsError as exc:
        ghoutput.warning(
            f"--until-green: cannot read the green records ({exc}): scheduling by {fallback}",
            env,
        )
        return None
    bounds = (
        ""
        if lookup.complete
        else (
            f"; stopped at --max-api-calls {args.max_api_calls} before answering every stack: "
            "the rest are scheduled"
        )
    )
    ghoutput.notice(
        f"--until-green: {len(lookup.green)} of {len(head.by_stack)} stacks are green at their "
        f"current inputs ({lookup.commits_read} commits, {lookup.calls} status requests{bounds})",
        env,
    )
    return lookup.green


def _source(
    args: argparse.Namespace, cwd: Path, env: Mapping[str, str], checkout: Checkout, tree: Tree
) -> _Source:
    catalog_path = _common.catalog_path(args)
    if args.catalog is not None or catalog_path.is_file():
        from ci_tools.catalog.variants import expand

        catalog = _common.load(args)
        branch = args.branch or _catalog_branch(catalog.branches, checkout, env)
        variants = expand(catalog, branch)
        return _Source(
            targets=tuple(matrix.from_variant(v) for v in variants),
            branch=branch,
            catalog_path=catalog_path,
            packages=frozenset(catalog.packages),
            sms=frozenset(catalog.gpus),
            facts={v.name: build_facts(v, catalog) for v in variants},
            facts_at=lambda commit: _catalog_facts_at(checkout, catalog_path, branch, commit),
        )
    return _discovered(args, cwd, env, checkout, tree)


def _catalog_branch(known: Mapping[str, object], checkout: Checkout, env: Mapping[str, str]) -> str:
    """The checked-out branch if the catalog has it; on a detached HEAD (a pull request's
    merge commit) the branch the workflow names; else `main`."""
    current = checkout.git.current_branch() if checkout.git is not None else None
    candidates = [current] if current is not None else _env_branches(env)
    return next((b for b in candidates if b in known), "main")


def _env_branches(env: Mapping[str, str]) -> list[str]:
    names = [env.get(v, "").strip() for v in ("GITHUB_BASE_REF", "GITHUB_HEAD_REF")]
    pushed = branch_from_env({"GITHUB_REF": env.get("GITHUB_REF", "")})
    return [n for n in [*names, pushed] if n]


def _catalog_facts_at(
    checkout: Checkout, catalog_path: Path, branch: str, commit: str
) -> Mapping[str, Hashable] | str:
    from ci_tools.base.errors import SourceError
    from ci_tools.catalog.load import parse_catalog_text
    from ci_tools.catalog.variants import expand

    rel = checkout.path_in_git(catalog_path)
    if rel is None or checkout.git is None:
        return (
            f"the catalog {catalog_path} lies outside the repository, so its state there is unknown"
        )
    text = checkout.git.show(commit, rel)
    if text is None:
        return f"{rel} did not exist at that commit"
    try:
        catalog = parse_catalog_text(text, f"{rel} at {commit[:12]}")
    except SourceError as exc:
        return f"{exc.problems[0]} (the catalog at that commit is invalid)"
    if branch not in catalog.branches:
        return {}
    return {v.name: build_facts(v, catalog) for v in expand(catalog, branch)}


def _discovered(
    args: argparse.Namespace, cwd: Path, env: Mapping[str, str], checkout: Checkout, tree: Tree
) -> _Source:
    from ci_tools.plan.discovery import discover

    prefix = layout.PKGS_DIR + "/"
    files = [p.removeprefix(prefix) for p in tree.files if p.startswith(prefix)]
    if not files and not (cwd / layout.PKGS_DIR).is_dir():
        raise InputError(
            f"no {layout.CATALOG} and no {layout.PKGS_DIR}/ in {cwd}: run ci-tools in the build "
            "repository's root, or pass --catalog PATH"
        )
    problems: list[str] = []
    if checkout.git is not None:
        problems += [
            f"{path.removeprefix(checkout.prefix)}: not tracked by git, so not in the commit a "
            "runner checks out and builds (flox builds what git tracks): `git add` and commit "
            "it, or delete it"
            for path in checkout.git.untracked(checkout.prefix + layout.PKGS_DIR)
        ]
    found = discover(files, ignore=args.ignore, pkgs_dir=layout.PKGS_DIR)
    problems += found.problems
    if problems:
        raise InputError(
            f"no {layout.CATALOG}: every file under {layout.PKGS_DIR}/ must be a variant "
            f"({names.GRAMMAR}); {len(problems)} "
            + ("is not" if len(problems) == 1 else "are not")
            + ":\n  "
            + "\n  ".join(problems)
        )
    return _Source(
        targets=found.targets,
        branch=args.branch or _discovered_branch(checkout, env),
        catalog_path=None,
        packages=frozenset(t.package for t in found.targets),
        sms=None,
        # The name says everything about a discovered variant.
        facts={t.name: t.name for t in found.targets},
        facts_at=lambda _commit: {t.name: t.name for t in found.targets},
    )


def _discovered_branch(checkout: Checkout, env: Mapping[str, str]) -> str:
    if checkout.git is None:
        return "main"
    current = checkout.git.current_branch()
    if current is not None:
        return current
    named = _env_branches(env)
    if named:
        return named[0]
    raise InputError(
        "HEAD is detached and GITHUB_BASE_REF, GITHUB_HEAD_REF and GITHUB_REF name no branch: "
        "pass --branch NAME"
    )


def _inventory(path: Path | None, cwd: Path, sms: frozenset[str] | None) -> Inventory:
    if path is None:
        path = cwd / layout.RUNNERS
        if not path.is_file():
            return default_inventory()
    return load_inventory(path, _display(path, cwd), known_sms=sms)


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return str(path)


def _empty_reason(source: _Source) -> str:
    if not source.targets:
        return f"the matrix is empty: branch {source.branch} has no variants"
    return (
        f"the matrix is empty: the selection matched none of the {len(source.targets)} "
        f"variants of branch {source.branch}"
    )
