"""The matrix's variants in a checkout with `.flox/pkgs/*.nix` and no catalog: the recipe
files git tracks at HEAD (strictly: `discovery`), as a `source.Source`.

Apart from `source` so that a repository with a catalog (every `ci-tools matrix` there)
does not compile it at every start.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base.bounded import shorten
from ci_tools.base.errors import InputError, printable
from ci_tools.catalog import grammar, layout, nameparse
from ci_tools.catalog.model import Catalog
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.source import Source, env_branches

if TYPE_CHECKING:
    from ci_tools.catalog.settings import Settings
    from ci_tools.plan.discovery import Discovered


def discovered(
    checkout: Checkout,
    *,
    ignore: list[str],
    branch: str | None,
    env: Mapping[str, str],
    settings: Settings,
) -> Source:
    """The variants named by the recipe files at HEAD; every file must be one (exit 2)."""
    found = discover_recipes(checkout, ignore=ignore, settings=settings)
    return Source(
        targets=found.targets,
        branch=branch or discovered_branch(checkout, env),
        catalog_path=None,
        packages=frozenset(t.package for t in found.targets),
        sms=None,
        cpu_flags=None,
        # The name says everything about a discovered variant.
        head_facts=lambda: {t.name: t.name for t in found.targets},
        facts_at=lambda _base: {t.name: t.name for t in found.targets},
    )


def named_catalog(
    checkout: Checkout,
    *,
    branch: str | None,
    env: Mapping[str, str],
    settings: Settings,
) -> Catalog:
    """The catalog of a repository without one, made from its recipes' names (`named`)."""
    from ci_tools.catalog.named import catalog_from_names

    found = discover_recipes(checkout, ignore=[], settings=settings)
    chosen = branch or discovered_branch(checkout, env)
    return catalog_from_names(found.parsed, branch=chosen, settings=settings, root=checkout.root)


def discover_recipes(checkout: Checkout, *, ignore: list[str], settings: Settings) -> Discovered:
    """Every recipe at HEAD as a variant name, or exit 2 naming each file that is not one."""
    from ci_tools.plan.discovery import discover

    prefix = layout.PKGS_DIR + "/"
    files = [p.removeprefix(prefix) for p in checkout.head.files if p.startswith(prefix)]
    if not files and not (checkout.root / layout.PKGS_DIR).is_dir():
        raise InputError(no_repository_here(checkout.root))
    problems: list[str] = []
    if checkout.git is not None:
        problems += [
            f"{path.removeprefix(checkout.prefix)}: not tracked by git, so not in the commit a "
            "runner checks out and builds (flox builds what git tracks): `git add` and commit "
            "it, or delete it"
            for path in checkout.git.untracked(checkout.prefix + layout.PKGS_DIR)
            if not settings.ignores(path.removeprefix(checkout.prefix + prefix))
        ]
    found = discover(files, ignore=ignore, pkgs_dir=layout.PKGS_DIR, settings=settings)
    problems += found.problems
    if problems:
        raise InputError(
            f"no {layout.CATALOG}: every file under {layout.PKGS_DIR}/ must be a variant "
            f"({nameparse.GRAMMAR}); {len(problems)} "
            + ("is not" if len(problems) == 1 else "are not")
            + ":\n  "
            + "\n  ".join(problems)
        )
    return found


def no_repository_here(folder: Path) -> str:
    """What to do where neither a catalog nor recipes are: name the repository's root when
    `folder` lies inside one, else say what ci-tools looks for."""
    from ci_tools.base import proc
    from ci_tools.base.gitrepo import GitRepo

    known = folder.is_dir() and proc.which("git") is not None
    where = GitRepo(root=folder).locate() if known else None
    top = where[0] if where is not None else None
    looked = f"no {layout.CATALOG} and no {layout.PKGS_DIR}/ in {folder}"
    inside = top is not None and top.resolve() != folder.resolve()
    if (
        top is not None
        and inside
        and ((top / layout.CATALOG).is_file() or (top / layout.PKGS_DIR).is_dir())
    ):
        return f"{looked}: this is inside the build repository {top}; run ci-tools there"
    return (
        f"{looked}: ci-tools reads a build repository's {layout.CATALOG}, or without one its "
        f"recipes under {layout.PKGS_DIR}/; run it where they are, or pass --catalog PATH"
    )


def discovered_branch(checkout: Checkout, env: Mapping[str, str]) -> str:
    """The checked-out branch, else the one the workflow names: validated like `--branch`,
    since it lands in every entry of the matrix and from there in the workflow's jobs."""
    if checkout.git is None:
        return "main"
    current = checkout.git.current_branch()
    named = [("git's current branch", current)] if current is not None else env_branches(env)
    if not named:
        raise InputError(
            "HEAD is detached and GITHUB_BASE_REF, GITHUB_HEAD_REF and GITHUB_REF name no "
            "branch: pass --branch NAME"
        )
    source, branch = named[0]
    why = grammar.BRANCH.problem(branch)
    if why is not None:
        raise InputError(
            f"the branch from {source}, {printable(shorten(branch, 100))!r}, {why}: "
            "pass --branch NAME"
        )
    return branch
