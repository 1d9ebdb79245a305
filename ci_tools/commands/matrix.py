"""`ci-tools matrix`: print the GitHub Actions build matrix, `{"include": [...]}`, as JSON.

Variants come from the catalog, or, in a checkout with `.flox/pkgs/*.nix` and no catalog,
from the recipe file names. The runner inventory (`runners.yaml`, optional) says where each
entry builds and what its test can check. stdout is the matrix, one entry per line;
`--github-output` also writes it compact to `$GITHUB_OUTPUT`, sharded by 256 entries.
This path must stay light: no jinja2, no PyGithub (a test holds it to that).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from ci_tools import ghoutput, layout, matrix
from ci_tools.commands import _common
from ci_tools.errors import InputError
from ci_tools.matrix import Group, Selection, Target
from ci_tools.model import Platform
from ci_tools.runners import Inventory, default_inventory, load_inventory
from ci_tools.yamlsrc import did_you_mean


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
        help="only stacks whose inputs changed between REF and HEAD (an unknown REF: everything)",
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


def run(args: argparse.Namespace) -> int:
    env = os.environ
    cwd = Path.cwd()
    output = ghoutput.output_path(env) if args.github_output else None
    source = _source(args, cwd, env)
    inventory = _inventory(args.runners, cwd, source.sms)
    for package in args.package:
        if package not in source.packages:
            raise InputError(
                f'--package "{package}" is unknown{did_you_mean(package, set(source.packages))}; '
                f"known: {', '.join(sorted(source.packages))}"
            )
    affected = _affected(cwd, args.since, source, env) if args.since is not None else None
    selection = Selection(
        packages=tuple(args.package),
        select=tuple(args.select),
        skip=tuple(args.skip),
        platforms=tuple(Platform(p) for p in args.platform),
        affected=affected,
    )
    entries = matrix.plan(
        source.targets, selection, inventory, branch=source.branch, group=Group(args.group)
    )
    if not entries:
        ghoutput.notice(_empty_reason(args, source, selection), env)
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


def _source(args: argparse.Namespace, cwd: Path, env: Mapping[str, str]) -> _Source:
    catalog_path = _common.catalog_path(args)
    if args.catalog is not None or catalog_path.is_file():
        from ci_tools.variants import expand

        catalog = _common.load(args)
        branch = args.branch or _common.default_branch(catalog, cwd)
        return _Source(
            targets=tuple(matrix.from_variant(v) for v in expand(catalog, branch)),
            branch=branch,
            catalog_path=catalog_path,
            packages=frozenset(catalog.packages),
            sms=frozenset(catalog.gpus),
        )
    return _discovered(args, cwd, env)


def _discovered(args: argparse.Namespace, cwd: Path, env: Mapping[str, str]) -> _Source:
    from ci_tools.discovery import discover

    pkgs = cwd / layout.PKGS_DIR
    if not pkgs.is_dir():
        raise InputError(
            f"no {layout.CATALOG} and no {layout.PKGS_DIR}/ in {cwd}: run ci-tools in the build "
            "repository's root, or pass --catalog PATH"
        )
    found = discover(pkgs)
    if found.ignored:
        ghoutput.warning(
            f"no {layout.CATALOG}: variants come from {layout.PKGS_DIR}/*.nix file names; "
            f"ignored {len(found.ignored)} that do not name a variant "
            f"(<pkg>-python<PY>-cuda<X>_<Y>-sm<N>-<isa>, <pkg>-python<PY>-cpu-<isa>, "
            f"<pkg>-python<PY>-darwin-mps): {', '.join(found.ignored)}",
            env,
        )
    return _Source(
        targets=found.targets,
        branch=args.branch or _common.current_git_branch(cwd) or "main",
        catalog_path=None,
        packages=frozenset(t.package for t in found.targets),
        sms=None,
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


class _ChangeSet(Protocol):
    @property
    def names(self) -> frozenset[str] | None: ...
    @property
    def notice(self) -> str | None: ...


def _affected(
    cwd: Path, ref: str, source: _Source, env: Mapping[str, str]
) -> frozenset[str] | None:
    """The variants whose inputs changed since `ref`; None means all of them."""
    # Imported by name only when --since is given: git and diffing are no cost to other runs.
    changes = importlib.import_module("ci_tools.changes")
    change_set = cast(
        _ChangeSet, changes.affected_variants(cwd, ref, source.branch, source.catalog_path)
    )
    if change_set.notice:
        ghoutput.notice(change_set.notice, env)
    return change_set.names


def _empty_reason(args: argparse.Namespace, source: _Source, selection: Selection) -> str:
    if not source.targets:
        return f"the matrix is empty: branch {source.branch} has no variants"
    unfiltered = Selection(
        packages=selection.packages,
        select=selection.select,
        skip=selection.skip,
        platforms=selection.platforms,
    )
    if selection.affected is not None and any(unfiltered.picks(t) for t in source.targets):
        return f"the matrix is empty: no selected variant's inputs changed since {args.since}"
    return (
        f"the matrix is empty: the selection matched none of the {len(source.targets)} "
        f"variants of branch {source.branch}"
    )
