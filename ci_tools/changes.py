"""Which variants a push changed: the variants whose inputs differ between REF and HEAD.

A variant's inputs are the files `layout.recipe_inputs` names (its recipe, the lib builder
and template it is rendered from, the sibling's for a dependent, the pinned-nixpkgs lib, the
flox manifest) and the catalog facts it is rendered and checked from (`build_facts`).

The rule for catalog fields: a field counts when it changes what `flox build` produces or
what `ci-tools test` expects of it. Descriptive fields do not: a GPU's `family` and
`hardware` list, an ISA's `description`, `hardware`, `workload` and `level` (an order for
recommending variants), a branch's `min_driver`, and the versions of packages the variant
is not built from. Editing those schedules nothing.
Line numbers never count: moving an entry is no change.

Lines that cannot change a build do not count in any file: blank lines, comment lines (`#`), Nix
`description = ...;` lines (`meta.description`, which is no part of the derivation). The
rendered recipes repeat descriptive catalog fields there, so a hardware-list edit changes
the recipes' text and still rebuilds nothing.

Files no variant names but that a recipe may import (a new file under `.flox/pkgs/lib/` or
`templates/lib/`, anything under `.flox/env/`) affect every variant: a missed rebuild costs
more than a spare one.

Cost: a fixed handful of git calls whatever the size of the change (two `git rev-parse`,
one `git diff --name-only`, one `git show` of the catalog at HEAD and, only when the catalog
changed, one at REF) and one parse of each catalog read. Everything else is in memory.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tools import layout, names
from ci_tools.catalog import parse_catalog_text
from ci_tools.errors import SourceError
from ci_tools.gitrepo import GitRepo
from ci_tools.model import Catalog
from ci_tools.variants import Variant, expand

# GitHub sends the all-zero id as `github.event.before` for a new branch.
_ZERO_SHA = re.compile(r"0{40}(0{24})?")

# Directories whose files recipes may import without `layout.recipe_inputs` naming them.
_SHARED_PREFIXES = (
    f"{layout.LIB_DIR}/",
    f"{layout.TEMPLATES_DIR}/lib/",
    f"{layout.TEMPLATES_DIR}/pkgs/",
    ".flox/env/",
)

# Changed lines that cannot change what a build produces (see the module doc).
_INERT_LINES = (
    # A blank line: git hands each line over with its newline, the control character
    # matched here (`^[[:space:]]*$` would match the empty end of every line).
    r"^[[:blank:]]*[[:cntrl:]]",
    r"^[[:space:]]*#",
    r'^[[:space:]]*description = ".*";[[:space:]]*$',
)

# Without a catalog, the package every other package of a stack builds against.
_BASE_PACKAGE = "pytorch"


@dataclass(frozen=True, kw_only=True)
class ChangeSet:
    """The variants to build; `names is None` means the full matrix (see `notice` for why)."""

    names: frozenset[str] | None
    notice: str | None

    @classmethod
    def full(cls, notice: str) -> ChangeSet:
        return cls(names=None, notice=notice)


def affected_variants(
    repo_root: Path, ref: str, branch: str, catalog_path: Path | None
) -> ChangeSet:
    """The variants of `branch` whose inputs differ between `ref` and HEAD.

    `catalog_path` None: a repository without a catalog, whose variants are the recipe files.
    """
    if _ZERO_SHA.fullmatch(ref):
        return ChangeSet.full(
            f"--since {ref}: no previous commit (a new branch); scheduling the full matrix"
        )
    top = GitRepo(root=repo_root).toplevel()
    if top is None:
        return ChangeSet.full(
            f"--since {ref}: {repo_root} is not in a git repository; scheduling the full matrix"
        )
    # git names paths from the top of the working tree; the build repository may be a
    # folder inside it, and its layout paths are relative to that folder.
    git = GitRepo(root=top)
    prefix = _relative(top, repo_root)
    if prefix is None:
        return ChangeSet.full(f"--since {ref}: cannot place {repo_root} inside {top}")
    prefix = "" if prefix == "." else prefix + "/"
    base = git.resolve_commit(ref)
    if base is None:
        return ChangeSet.full(
            f"--since {ref}: this clone has no such commit (a force push, or a shallow clone: "
            "check out with fetch-depth: 0); scheduling the full matrix"
        )
    changed_in_repo = git.changed_paths(base, ignore_lines=_INERT_LINES)
    changed = frozenset(p.removeprefix(prefix) for p in changed_in_repo if p.startswith(prefix))
    if catalog_path is None:
        return _without_catalog(git, prefix, changed)
    rel = _relative(top, catalog_path)
    if rel is None:
        return ChangeSet.full(
            f"--since {ref}: the catalog {catalog_path} lies outside the repository, so its "
            "state at that commit is unknown; scheduling the full matrix"
        )
    return _with_catalog(git, ref, base, branch, rel, rel in changed_in_repo, changed)


def _with_catalog(
    git: GitRepo,
    ref: str,
    base: str,
    branch: str,
    rel: str,
    catalog_changed: bool,
    changed: frozenset[str],
) -> ChangeSet:
    """`rel`: the catalog's path from the top of the repository; `changed`: changed paths
    from the build repository's root."""
    head_text = git.show("HEAD", rel)
    if head_text is None:
        return ChangeSet.full(
            f"--since {ref}: {rel} is not committed at HEAD; scheduling the full matrix"
        )
    head_catalog = parse_catalog_text(head_text, rel)
    head = {v.name: v for v in expand(head_catalog, branch)}
    # Build facts at REF by variant name; None when the catalog is the same file at both.
    before: dict[str, Hashable] | None = None
    if catalog_changed:
        ref_text = git.show(base, rel)
        if ref_text is None:
            return ChangeSet.full(
                f"--since {ref}: {rel} did not exist at that commit; scheduling the full matrix"
            )
        try:
            ref_catalog = parse_catalog_text(ref_text, f"{rel} at {ref}")
        except SourceError as exc:
            return ChangeSet.full(
                f"--since {ref}: {exc.problems[0]} (the catalog at that commit is invalid); "
                "scheduling the full matrix"
            )
        before = {}
        if branch in ref_catalog.branches:
            before = {v.name: build_facts(v, ref_catalog) for v in expand(ref_catalog, branch)}
    named = {path for v in head.values() for path in layout.recipe_inputs(v)}
    if any(p.startswith(_SHARED_PREFIXES) and p not in named for p in changed):
        # A file a recipe may import that no variant names: who uses it is unknown.
        return ChangeSet(names=frozenset(head), notice=None)
    affected = {
        name
        for name, variant in head.items()
        if not changed.isdisjoint(layout.recipe_inputs(variant))
        or (before is not None and before.get(name) != build_facts(variant, head_catalog))
    }
    # A dependent builds against its sibling: whatever rebuilds the sibling rebuilds it.
    affected |= {
        name for name, v in head.items() if v.requires is not None and v.requires in affected
    }
    return ChangeSet(names=frozenset(affected), notice=None)


def build_facts(variant: Variant, catalog: Catalog) -> Hashable:
    """The catalog facts that decide a variant's build and its checks (see the module doc)."""
    branch = variant.branch
    packages = [variant.package]
    if variant.package.requires is not None:
        packages.append(catalog.packages[variant.package.requires])
    package_facts = tuple(
        (p.name, p.attribute, p.import_name, p.requires, branch.versions.get(p.name))
        for p in packages
    )
    gpu = variant.gpu
    isa = variant.isa
    return (
        variant.name,
        variant.kind,
        variant.python,
        package_facts,
        (
            branch.cuda,
            branch.nixpkgs_rev,
            branch.nixpkgs_sha256,
            branch.cuda_packages,
            branch.overlays,
        ),
        None if gpu is None else (gpu.capability, gpu.cudnn),
        None
        if isa is None
        else (
            isa.platform,
            isa.compiler_flags,
            isa.cpuinfo,
            isa.torch_capability,
            isa.disables,
        ),
    )


def _without_catalog(git: GitRepo, prefix: str, changed: frozenset[str]) -> ChangeSet:
    recipes = _recipes_at_head(git, prefix)
    if any(_is_shared_without_catalog(p) for p in changed):
        return ChangeSet(names=frozenset(recipes), notice=None)
    affected: set[str] = set()
    changed_suffixes: set[str] = set()
    for name, parsed in recipes.items():
        if layout.recipe_path(name) in changed:
            affected.add(name)
            if parsed.package == _BASE_PACKAGE:
                changed_suffixes.add(parsed.suffix)
    affected |= {name for name, p in recipes.items() if p.suffix in changed_suffixes}
    return ChangeSet(names=frozenset(affected), notice=None)


def _recipes_at_head(git: GitRepo, prefix: str) -> Mapping[str, names.ParsedName]:
    out: dict[str, names.ParsedName] = {}
    for path in git.list_files("HEAD", prefix + layout.PKGS_DIR):
        stem = path.rsplit("/", 1)[-1].removesuffix(".nix")
        parsed = names.parse_name(stem) if path.endswith(".nix") else None
        if parsed is not None:
            out[stem] = parsed
    return out


def _is_shared_without_catalog(path: str) -> bool:
    """Under `.flox/` but not one top-level recipe, or under nix/ (the shared Nix code):
    a builder, the pin or the environment, which all use."""
    if path.startswith(f"{layout.NIX_DIR}/"):
        return True
    if not path.startswith(".flox/"):
        return False
    if path.startswith(f"{layout.PKGS_DIR}/"):
        rest = path.removeprefix(f"{layout.PKGS_DIR}/")
        return "/" in rest
    return True


def _relative(root: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
