"""Where the matrix's variants come from: the catalog, or, in a checkout with `.flox/pkgs/*.nix`
and no catalog, the recipe files git tracks (`recipesource`; strictly: `discovery`).

Either way the result is a `Source`: the variants as `Target`s, the branch they are for, and
the facts of each variant that reach its build, at HEAD and, through `facts_at`, at another
commit (for `--since`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.catalog.model import Catalog
from ci_tools.plan import matrix
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.matrix import Target

if TYPE_CHECKING:
    from ci_tools.catalog.variants import Variant
    from ci_tools.plan.changes import Base, FactsAt


@dataclass(frozen=True, kw_only=True)
class Source:
    """The variants the matrix plans, their branch, and the facts their fingerprints read."""

    targets: tuple[Target, ...]
    branch: str
    catalog_path: Path | None  # None: discovered from recipe file names
    packages: frozenset[str]  # every package the source knows, for --package
    sms: frozenset[str] | None  # the catalog's GPUs, for the inventory's test runners
    cpu_flags: frozenset[str] | None  # the flags the catalog's ISAs need, for the inventory's
    # Variant name -> the catalog facts that reach its build, at HEAD and at another commit;
    # asked only for fingerprints.
    head_facts: Callable[[], Mapping[str, Hashable]]
    facts_at: FactsAt


def from_catalog(
    catalog: Catalog,
    catalog_path: Path,
    branch: str | None,
    checkout: Checkout,
    env: Mapping[str, str],
) -> Source:
    """The catalog's variants of `branch` (None: the checked-out branch if the catalog has
    it, else the branch the workflow names, else `main`)."""
    from ci_tools.catalog.variants import expand

    chosen = branch or catalog_branch(catalog.branches, checkout, env)
    variants = expand(catalog, chosen)

    @functools.cache
    def head_facts() -> Mapping[str, Hashable]:
        return _Facts(variants, catalog)

    def facts_at(base: Base) -> Mapping[str, Hashable] | str:
        return _catalog_facts_at(checkout, catalog_path, chosen, base, head_facts)

    return Source(
        targets=tuple(matrix.from_variant(v) for v in variants),
        branch=chosen,
        catalog_path=catalog_path,
        packages=frozenset(catalog.packages),
        sms=frozenset(catalog.gpus),
        cpu_flags=frozenset(flag for isa in catalog.isas.values() for flag in isa.cpuinfo),
        head_facts=head_facts,
        facts_at=facts_at,
    )


class _Facts(Mapping[str, Hashable]):
    """Variant name -> the catalog facts that reach its build, each made when first asked:
    `--since` asks only those of the stacks a push may have changed."""

    def __init__(self, variants: Sequence[Variant], catalog: Catalog) -> None:
        self._variants = {v.name: v for v in variants}
        self._catalog = catalog
        self._made: dict[str, Hashable] = {}

    def __getitem__(self, name: str) -> Hashable:
        from ci_tools.plan.fingerprint import build_facts

        if name not in self._made:
            self._made[name] = build_facts(self._variants[name], self._catalog)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._variants)

    def __len__(self) -> int:
        return len(self._variants)


def catalog_branch(known: Mapping[str, object], checkout: Checkout, env: Mapping[str, str]) -> str:
    """The checked-out branch if the catalog has it; on a detached HEAD (a pull request's
    merge commit) the branch the workflow names; else `main`."""
    current = checkout.git.current_branch() if checkout.git is not None else None
    candidates = [current] if current is not None else [b for _, b in env_branches(env)]
    return next((b for b in candidates if b in known), "main")


def env_branches(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, branch) for each branch the workflow's variables name, in order."""
    from ci_tools.base.gitrepo import branch_from_env

    names = [(v, env.get(v, "").strip()) for v in ("GITHUB_BASE_REF", "GITHUB_HEAD_REF")]
    names.append(("GITHUB_REF", branch_from_env({"GITHUB_REF": env.get("GITHUB_REF", "")}) or ""))
    return [(variable, name) for variable, name in names if name]


def _catalog_facts_at(
    checkout: Checkout,
    catalog_path: Path,
    branch: str,
    base: Base,
    head_facts: Callable[[], Mapping[str, Hashable]],
) -> Mapping[str, Hashable] | str:
    """The facts of `branch`'s variants in the catalog at `base`; HEAD's, without parsing
    it again, when its text there is the text the plan loaded (a push that leaves it alone):
    told by the blob id in `base`'s listing where the catalog is in it, else by its text."""
    from ci_tools.base import bounded
    from ci_tools.base.errors import SourceError
    from ci_tools.catalog.load import parse_catalog_text
    from ci_tools.catalog.variants import expand
    from ci_tools.catalog.yamlsrc import MAX_FILE_BYTES
    from ci_tools.plan.fingerprint import build_facts

    rel = checkout.path_in_git(catalog_path)
    if rel is None or checkout.git is None:
        return (
            f"the catalog {catalog_path} lies outside the repository, so its state there is unknown"
        )
    if _unchanged_at(checkout, catalog_path, rel, base):
        return head_facts()
    commit = base.commit
    text = checkout.git.show(commit, rel)
    if text is None:
        return f"{rel} did not exist at that commit"
    with contextlib.suppress(OSError, UnicodeDecodeError):  # bounded.RefusedInput is one
        # As load_catalog read it: the same text parses to the same catalog.
        if bounded.read_text(catalog_path, MAX_FILE_BYTES) == text:
            return head_facts()
    try:
        catalog = parse_catalog_text(text, f"{rel} at {commit[:12]}")
    except SourceError as exc:
        return f"{exc.problems[0]} (the catalog at that commit is invalid)"
    if branch not in catalog.branches:
        return {}
    return {v.name: build_facts(v, catalog) for v in expand(catalog, branch)}


def _unchanged_at(checkout: Checkout, catalog_path: Path, rel: str, base: Base) -> bool:
    """Whether the catalog file the plan loaded holds the bytes of the blob `base` lists at
    `rel` (a path in git's repository): then no `git show` is needed."""
    from ci_tools.base import bounded
    from ci_tools.base.gitrepo import blob_id
    from ci_tools.catalog.yamlsrc import MAX_FILE_BYTES

    inside = rel.removeprefix(checkout.prefix) if rel.startswith(checkout.prefix) else None
    blob = base.tree.files.get(inside) if inside is not None else None
    if blob is None:
        return False
    try:
        data = bounded.read_bytes(catalog_path, MAX_FILE_BYTES)
    except OSError:  # bounded.RefusedInput is one
        return False
    return blob_id(data, blob) == blob


def empty_reason(source: Source) -> str:
    """Why the matrix is empty when the selection left nothing."""
    if not source.targets:
        return f"the matrix is empty: branch {source.branch} has no variants"
    return (
        f"the matrix is empty: the selection matched none of the {len(source.targets)} "
        f"variants of branch {source.branch}"
    )
