"""`ci-tools sync-workflows [--check]`: the workflows' branch lists follow the catalog."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from ci_tools.base.errors import InputError
from ci_tools.base.fsutil import atomic_write_text, confine
from ci_tools.catalog import layout
from ci_tools.commands._common import add_catalog_option, catalog_path, load
from ci_tools.render.workflowsync import MANAGED, FileSync, sync_file


def configure(parser: argparse.ArgumentParser) -> None:
    add_catalog_option(parser)
    parser.add_argument(
        "--workflows",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"the workflows folder (default: {layout.WORKFLOWS_DIR}, which must lie inside "
        "the checkout once symbolic links are resolved)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a workflow's branch list differs from the catalog's "
        f"branches (without a catalog: `branches:` in {layout.SETTINGS})",
    )


def _branches(args: argparse.Namespace) -> tuple[tuple[str, ...], str]:
    """The branches the workflows must list, and where they come from: the catalog, or in a
    repository without one the settings file's `branches:`."""
    if args.catalog is not None or catalog_path(args).is_file():
        catalog = load(args)
        return tuple(catalog.branches), catalog.display_name
    from ci_tools.catalog.settings import load_settings

    settings = load_settings(Path.cwd())
    if not settings.branches:
        raise InputError(
            f"no {layout.CATALOG} here, so the workflows' branch lists come from `branches:` "
            f"in {layout.SETTINGS}, which names none: list the branches CI builds there"
        )
    return tuple(settings.branches), layout.SETTINGS


def run(args: argparse.Namespace) -> int:
    branches, source = _branches(args)
    directory: Path = args.workflows or Path(layout.WORKFLOWS_DIR)
    results = [
        sync_file(directory / name, str(directory / name), specs, branches)
        for name, specs in MANAGED.items()
        if (directory / name).is_file()
    ]
    if not results:
        raise InputError(
            f"{directory}: none of {', '.join(MANAGED)} is here; run ci-tools in the build "
            "repository's root or pass --workflows DIR"
        )
    stale = [r for r in results if r.stale]
    if not stale:
        print(f"{', '.join(r.display for r in results)}: branch lists match {source}")
        return 0
    if args.check:
        for result in stale:
            _describe(result, branches, sys.stderr)
        print(
            f"ci-tools: {len(stale)} workflow(s) out of date with {source}; "
            "run `ci-tools sync-workflows` to update them",
            file=sys.stderr,
        )
        return 1
    # Never through a link to a folder elsewhere: the checkout for the default folder, the
    # folder itself for one named with --workflows (as `generate --out`).
    roots = (directory,) if args.workflows is not None else (Path.cwd(),)
    targets = [confine(result.path, roots) for result in stale]
    for result, target in zip(stale, targets, strict=True):
        atomic_write_text(target, result.new_text)
        _describe(result, branches, sys.stdout, verb="updated")
    return 0


def _describe(
    result: FileSync, branches: tuple[str, ...], stream: TextIO, verb: str = "stale"
) -> None:
    for item in result.stale:
        print(
            f"{result.display}:{item.line}: {verb} {item.label}: "
            f"[{', '.join(item.found)}] -> [{', '.join(branches)}]",
            file=stream,
        )
