"""What `matrix` and `mark-green` both read: the branch's variants (from the catalog, or from
the recipe files where there is none) and the runner inventory, with their options."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from ci_tools.catalog import layout
from ci_tools.commands import _common
from ci_tools.plan import source
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.runners import Inventory, find_inventory


def add_branch_option(parser: argparse.ArgumentParser) -> None:
    _common.add_branch_option(parser, "the branch; without a catalog, only the entries' field")


def add_ignore_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="NAME",
        help=f"without a catalog: a file or folder directly under {layout.PKGS_DIR}/ (by name, "
        f"without .nix) that is not a variant (repeatable); globs under `ignore:` in "
        f"{layout.SETTINGS} do the same for every command",
    )


def add_runners_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runners",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the runner inventory (default: {layout.RUNNERS} in the current directory if "
        "present, else one pool per platform with the default labels)",
    )


def variants(args: argparse.Namespace, env: Mapping[str, str], checkout: Checkout) -> source.Source:
    catalog_path = _common.catalog_path(args)
    if args.catalog is not None or catalog_path.is_file():
        return source.from_catalog(_common.load(args), catalog_path, args.branch, checkout, env)
    from ci_tools.catalog.settings import load_settings
    from ci_tools.plan.recipesource import discovered

    settings = load_settings(checkout.root)
    return discovered(checkout, ignore=args.ignore, branch=args.branch, env=env, settings=settings)


def inventory(
    path: Path | None, cwd: Path, sms: frozenset[str] | None, flags: frozenset[str] | None
) -> Inventory:
    """`--runners`, else runners.yaml in `cwd`, else the defaults; `sms` and `flags` (the
    catalog's) catch test runners and CPU flags no variant can use."""
    return find_inventory(path, cwd, sms, flags)
