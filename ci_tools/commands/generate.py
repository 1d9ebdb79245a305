"""`ci-tools generate`: render a branch's recipes, and the generated tables of the README and
docs/, from the catalog.

Everything is rendered and validated in memory first; only then is anything written, in one
transaction (`generated.apply`): on any failure nothing changed, and a run killed half-way is
finished or undone by the next. Runs on one folder take turns (`fsutil.locked`). `--check`
writes nothing and fails naming every file that differs and anything an interrupted run left
behind.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base import bounded, fsutil
from ci_tools.base.errors import EXIT_OK, FailedError, InputError
from ci_tools.catalog import layout
from ci_tools.catalog.model import Catalog
from ci_tools.commands import _common
from ci_tools.render import branchguard, generated, readme, recipes

if TYPE_CHECKING:
    import jinja2


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument(
        "--branch",
        metavar="B",
        type=_common.branch_name,
        help="the catalog branch to render (default: the checked-out git branch if the "
        "catalog has it, else the branch its recipes were rendered for, else main); "
        "rendering another branch than the checked-out one into the repository's recipes is "
        "refused: switch branch first, or use --out",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where the recipes go (default: {layout.PKGS_DIR}); the tables in the README and docs/ are "
        "kept current only for the default",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 naming every missing, stale or extra file",
    )


def run(args: argparse.Namespace) -> int:
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise InputError(f"--out {args.out}: not a folder")
    catalog = _common.load_file(args)
    root = _common.catalog_path(args).resolve().parent
    out_dir: Path = args.out if args.out is not None else Path(layout.PKGS_DIR)
    branch = _branch(args, catalog, root, out_dir)
    # Where writes may land once symlinks are resolved: the checkout, or the folder named.
    roots = (out_dir,) if args.out is not None else (Path.cwd(),)

    env = recipes.environment()
    files = recipes.render_branch(catalog, branch, env)
    if args.check:
        with _locked(out_dir, shared=True):
            plan = generated.plan(out_dir, files)
            return _check(plan, _docs_updates(root, out_dir, catalog, env), branch)
    generated.prepare(out_dir, roots)
    with _locked(out_dir, shared=False):
        recovered = generated.recover(out_dir, files, roots)
        plan = generated.plan(out_dir, files)
        docs_updates = _docs_updates(root, out_dir, catalog, env)
        generated.apply(plan, also=docs_updates, roots=roots)
    for line in recovered:
        print(f"generate: {line}")
    written = len(plan.missing) + len(plan.stale)
    print(
        f"generate: branch {branch}: {recipes.recipe_count(files)} recipes in {out_dir}: "
        f"{written} written, "
        f"{plan.unchanged} unchanged, {len(plan.extra)} removed"
        + "".join(f"; updated {_shown(path)}" for path, _ in docs_updates)
    )
    return EXIT_OK


def _shown(path: Path) -> str:
    """A document as the messages name it: README.md, docs/reference.md."""
    return path.name if path.parent.name != layout.DOCS_DIR else f"{layout.DOCS_DIR}/{path.name}"


def _locked(out_dir: Path, *, shared: bool) -> contextlib.AbstractContextManager[None]:
    """One generate at a time on a folder (a --check reads while none writes): runs on one
    folder are serialised, so it always ends as the rendering of the last one."""
    if shared and not out_dir.is_dir():
        return contextlib.nullcontext()
    return fsutil.locked(
        out_dir, shared=shared, say=lambda line: print(f"generate: {line}", flush=True)
    )


MAX_README_BYTES = 4 << 20


def _branch(args: argparse.Namespace, catalog: Catalog, root: Path, out_dir: Path) -> str:
    """The branch to render; refused (exit 2) where it would replace another branch's recipes
    in the checkout (`branchguard`). `--check` writes nothing, so it is never refused."""
    own_folder = root / layout.PKGS_DIR
    checked_out = _common.current_git_branch(root)
    recipes_of = branchguard.recipe_branches(own_folder)
    branch: str = args.branch or branchguard.default_branch(
        catalog.branches, checked_out, recipes_of
    )
    catalog.branch(branch)  # an unknown branch is bad input that lists the known ones
    if args.check or out_dir.resolve() != own_folder.resolve():
        return branch
    problem = branchguard.problem(
        rendered=branch,
        checked_out=checked_out,
        catalog_branches=catalog.branches,
        recipes_of=recipes_of,
        folder=layout.PKGS_DIR,
    )
    if problem is not None:
        raise InputError(problem)
    return branch


def _docs_updates(
    root: Path, out_dir: Path, catalog: Catalog, env: jinja2.Environment
) -> list[tuple[Path, str]]:
    """The new text of each document whose generated blocks are out of date: the README and
    the pages under docs/ (`layout.generated_docs`), which between them hold each block once.

    Only a run for the repository itself (the default output directory) keeps them; a run
    into another directory leaves them alone. A repository without them has nothing to keep
    current.
    """
    if out_dir.resolve() != (root / layout.PKGS_DIR).resolve():
        return []
    paths = layout.generated_docs(root)
    if not paths:
        return []
    texts = {}
    for path in paths:
        try:
            texts[path.relative_to(root).as_posix()] = bounded.read_text(path, MAX_README_BYTES)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read it: {exc}") from None
    new_texts = readme.splice_documents(texts, readme.render_blocks(catalog, env))
    return [(root / name, text) for name, text in new_texts.items() if text != texts[name]]


def _check(plan: generated.Plan, docs_updates: list[tuple[Path, str]], branch: str) -> int:
    problems = [
        *(f"missing: {plan.out_dir / f.path}" for f in plan.missing),
        *(f"stale: {plan.out_dir / f.path}" for f in plan.stale),
        *(f"not generated (no header), differs: {plan.out_dir / p}" for p in plan.foreign),
        *(f"extra: {plan.out_dir / p} (the catalog no longer produces it)" for p in plan.extra),
        *(f"left by an interrupted generate: {p}" for p in plan.leftovers),
    ]
    problems += [f"stale: {_shown(path)} (its generated tables)" for path, _ in docs_updates]
    if not problems:
        print(f"generate --check: branch {branch}: {plan.unchanged} files current")
        return EXIT_OK
    raise FailedError(
        f"{len(problems)} generated file(s) differ from the catalog; "
        f"run `ci-tools generate --branch {branch}` and commit the result:\n"
        + "\n".join(f"  {line}" for line in problems)
    )
