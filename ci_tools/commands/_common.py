"""Options and loading shared by several commands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ci_tools.base import digits
from ci_tools.base.errors import InputError, printable
from ci_tools.catalog import grammar, layout
from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.model import Catalog


def add_catalog_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--catalog",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the catalog file (default: {layout.CATALOG} in the current directory)",
    )


def catalog_path(args: argparse.Namespace) -> Path:
    path: Path | None = getattr(args, "catalog", None)
    return path if path is not None else Path.cwd() / layout.CATALOG


def load(args: argparse.Namespace) -> Catalog:
    path = catalog_path(args)
    if not path.is_file():
        raise InputError(
            f"{path}: no catalog here; run ci-tools in the build repository's root "
            "or pass --catalog PATH"
        )
    return load_catalog(path, display_name=_display(path))


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def current_git_branch(cwd: Path) -> str | None:
    # Imported here: `ci-tools matrix --branch B` starts no process, nor pays for the module.
    from ci_tools.base import proc

    if proc.which("git") is None:
        return None
    result = proc.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, timeout=30)
    if not result.ok:
        return None
    name = result.stdout.strip()
    return None if name in ("", "HEAD") else name


def default_branch(catalog: Catalog, cwd: Path) -> str:
    """The current git branch if the catalog has it, else `main`."""
    current = current_git_branch(cwd)
    if current is not None and current in catalog.branches:
        return current
    return "main"


def branch_name(text: str) -> str:
    """`--branch`: a git branch name; empty is an error, not "the default branch"."""
    if not text:
        raise argparse.ArgumentTypeError("empty; name a branch, or leave --branch out")
    why = grammar.BRANCH.problem(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{printable(text)!r} {why}")
    return text


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number (ASCII digits) from `low` to `high`."""

    def parse(text: str) -> int:
        value = digits.whole(text.strip(), max_digits=9)
        if value is None:
            raise argparse.ArgumentTypeError(
                f"{printable(digits.shown(text))!r} is not a whole number"
            )
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {value}")
        return value

    return parse


def org_name(text: str) -> str:
    """`--org` is printed into `flox install ORG/NAME`: a FloxHub handle, nothing a shell reads."""
    why = grammar.ORG.problem(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{printable(text)!r} {why}")
    return text
