"""Options and loading shared by several commands."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

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
        help=f"the catalog file (default: {layout.CATALOG} in the current directory; without "
        f"one, the names of the recipes under {layout.PKGS_DIR}/, the built-in facts and "
        f"{layout.SETTINGS})",
    )


# Every command's default branch, in the same words (`generate` adds one rule of its own).
BRANCH_DEFAULT = (
    "default: the checked-out git branch if the catalog has it; on a detached HEAD the "
    "branch GITHUB_BASE_REF, GITHUB_HEAD_REF or GITHUB_REF names; else main. Without a "
    "catalog: the checked-out or so named branch"
)


def add_branch_option(parser: argparse.ArgumentParser, what: str = "the branch") -> None:
    parser.add_argument(
        "--branch", metavar="B", type=branch_name, help=f"{what} ({BRANCH_DEFAULT})"
    )


def catalog_path(args: argparse.Namespace) -> Path:
    path: Path | None = getattr(args, "catalog", None)
    return path if path is not None else Path.cwd() / layout.CATALOG


def load_file(args: argparse.Namespace) -> Catalog:
    """The catalog file itself: `generate` renders from nothing else."""
    path = catalog_path(args)
    if not path.is_file():
        raise InputError(
            f"{path}: no catalog: `generate` renders recipes from {layout.CATALOG}, which this "
            f"repository does not have; its hand-written recipes under {layout.PKGS_DIR}/ "
            "are its own (every other command works from their names). Pass --catalog PATH "
            "to render from a catalog elsewhere"
        )
    return load_catalog(path, display_name=_display(path))


def load(args: argparse.Namespace) -> Catalog:
    """The catalog; in a repository without one (and no --catalog), the catalog its recipes'
    names make, with the built-in facts and the settings file (`catalog.named`)."""
    path = catalog_path(args)
    if path.is_file():
        return load_catalog(path, display_name=_display(path))
    if getattr(args, "catalog", None) is not None:
        raise InputError(f"--catalog {path}: no such file")
    # Imported here: only a repository without a catalog pays for git and discovery.
    from ci_tools.catalog.settings import load_settings
    from ci_tools.plan.checkout import Checkout
    from ci_tools.plan.recipesource import named_catalog

    root = Path.cwd()
    return named_catalog(
        Checkout(root=root),
        branch=getattr(args, "branch", None),
        env=os.environ,
        settings=load_settings(root),
    )


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
    """The branch a command works on without --branch (BRANCH_DEFAULT); a catalog made from
    recipe names has one branch, already the checked-out (or named) one."""
    if len(catalog.branches) == 1 and next(iter(catalog.branches.values())).published:
        return next(iter(catalog.branches))
    from ci_tools.plan.checkout import Checkout
    from ci_tools.plan.source import catalog_branch

    return catalog_branch(catalog.branches, Checkout(root=cwd), os.environ)


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
        from ci_tools.base import digits  # here: read only when the option is given

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
