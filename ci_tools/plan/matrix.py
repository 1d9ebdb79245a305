"""Variants + runner inventory -> GitHub Actions matrix entries. Pure: no files, no processes.

The matrix works on `Target`s, the few facts it needs about a variant, so that variants from
the catalog and variants discovered from recipe file names (`discovery`) schedule alike.

Selection (cibuildwheel-style) picks variants by package, platform and name globs. A picked
dependent (torchvision-X) always keeps its base (pytorch-X) in its stack's `packages`: its
recipe imports the base's recipe, so the base is built anyway, and listing it gives the base
its own result record and test. With `--group none` each picked variant is one entry on its
own and the base is not added (its recipe still builds it as a dependency).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ci_tools.catalog.model import Kind, Platform
from ci_tools.catalog.variants import Variant
from ci_tools.plan import runners
from ci_tools.plan.runners import Inventory, Placement

# GitHub runs at most 256 jobs from one matrix.
SHARD_SIZE = 256
DEFAULT_MAX_SHARDS = 4


class Group(StrEnum):
    STACK = "stack"  # one entry per stack: the base package, then its dependents
    NONE = "none"  # one entry per package


@dataclass(frozen=True, kw_only=True)
class Target:
    """One buildable variant as the matrix sees it (satisfies runners.Placeable)."""

    name: str
    package: str
    base: str | None  # the variant this one builds against (torchvision-X -> pytorch-X)
    suffix: str  # the name without its package: shared by one stack's variants
    python: str  # "3.13"
    kind: Kind
    platform: Platform
    sm: str | None
    isa: str | None
    cpuinfo: tuple[str, ...] | None  # flags a CPU needs to run it; None: unknown ISA
    build: str | None = None  # a build suffix of its name ("nightly"): another build of it


def from_variant(variant: Variant) -> Target:
    return Target(
        name=variant.name,
        package=variant.package.name,
        base=variant.requires,
        suffix=variant.suffix,
        python=variant.python,
        kind=variant.kind,
        platform=variant.platform,
        sm=variant.gpu.name if variant.gpu is not None else None,
        isa=variant.isa.name if variant.isa is not None else None,
        cpuinfo=variant.isa.cpuinfo if variant.isa is not None else None,
    )


@dataclass(frozen=True, kw_only=True)
class Selection:
    """What the options keep of the branch's variants (`--package`, `--select` ...)."""

    packages: tuple[str, ...] = ()  # empty: every package
    select: tuple[str, ...] = ()  # fnmatch globs on variant names; empty: every variant
    skip: tuple[str, ...] = ()
    platforms: tuple[Platform, ...] = ()  # empty: every platform
    affected: frozenset[str] | None = None  # from change detection; None: everything

    def picks(self, target: Target) -> bool:
        if self.packages and target.package not in self.packages:
            return False
        if self.platforms and target.platform not in self.platforms:
            return False
        if self.select and not any(fnmatch.fnmatchcase(target.name, g) for g in self.select):
            return False
        return not any(fnmatch.fnmatchcase(target.name, g) for g in self.skip)


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One entry of the matrix: a stack (or a package) and where it builds."""

    name: str
    branch: str
    packages: tuple[str, ...]  # build order
    platform: Platform
    placement: Placement
    fingerprint: str | None = None  # the stack's input fingerprint (`fingerprint`)

    def to_json(self) -> dict[str, Any]:
        row = {
            "name": self.name,
            "branch": self.branch,
            "packages": list(self.packages),
            "platform": self.platform.value,
            "runs_on": list(self.placement.runs_on),
            "timeout_minutes": self.placement.timeout_minutes,
            "test": self.placement.test.value,
            "test_reason": self.placement.test_reason,
            "test_runs_on": list(self.placement.test_runs_on),
            "test_timeout_minutes": self.placement.test_timeout_minutes,
        }
        if self.fingerprint is not None:
            row["fingerprint"] = self.fingerprint
        return row


def plan(
    targets: Sequence[Target],
    selection: Selection,
    inventory: Inventory,
    *,
    branch: str,
    group: Group = Group.STACK,
) -> tuple[Entry, ...]:
    """The matrix entries for `targets`, in their order (a stack where its base appears).

    A platform without a builder pool is bad input naming the platform and its variants.
    """
    by_name = {t.name: t for t in targets}
    picked = [t for t in targets if selection.picks(t)]
    short = _short_names(targets)
    units: list[tuple[str, tuple[Target, ...]]]
    if group is Group.NONE:
        units = [(f"{t.package}-{short[t.suffix]}", (t,)) for t in picked]
    else:
        units = [(short[suffix], members) for suffix, members in _stacks(picked, by_name)]
    affected = selection.affected
    if affected is not None:
        units = [u for u in units if any(t.name in affected for t in u[1])]

    entries: list[Entry] = []
    unserved: dict[Platform, list[str]] = {}
    # Thousands of variants share a few hundred (platform, kind, SM, ISA) combinations.
    placements: dict[tuple[object, ...], Placement | None] = {}
    for name, members in units:
        lead = members[0]
        key = (lead.platform, lead.kind, lead.sm, lead.isa, lead.cpuinfo)
        if key not in placements:
            placements[key] = runners.place(inventory, lead)
        placement = placements[key]
        if placement is None:
            unserved.setdefault(lead.platform, []).extend(t.name for t in members)
            continue
        entries.append(
            Entry(
                name=name,
                branch=branch,
                packages=tuple(t.name for t in members),
                platform=lead.platform,
                placement=placement,
            )
        )
    if unserved:
        raise runners.unserved(inventory, unserved)
    return tuple(entries)


def _stacks(
    picked: Iterable[Target], by_name: dict[str, Target]
) -> list[tuple[str, tuple[Target, ...]]]:
    """Group by suffix, adding each picked dependent's base; the base builds first."""
    groups: dict[str, dict[str, Target]] = {}
    for target in picked:
        members = groups.setdefault(target.suffix, {})
        current: Target | None = target
        while current is not None and current.name not in members:
            members[current.name] = current
            current = by_name.get(current.base) if current.base is not None else None
    return [
        (suffix, tuple(sorted(members.values(), key=_build_order)))
        for suffix, members in groups.items()
    ]


def _build_order(target: Target) -> tuple[bool, str]:
    return (target.base is not None, target.package)


def short_name(target: Target) -> str:
    """'python313-cuda12_8-sm90-avx512' -> 'py313-sm90-avx512': a branch has one CUDA."""
    py = "py" + target.python.replace(".", "")
    build = f"-{target.build}" if target.build is not None else ""
    if target.kind is Kind.DARWIN:
        return f"{py}-darwin-mps{build}"
    if target.kind is Kind.CPU:
        return f"{py}-cpu-{target.isa}{build}"
    return f"{py}-{target.sm}-{target.isa}{build}"


def _short_names(targets: Iterable[Target]) -> dict[str, str]:
    """suffix -> entry name. Decided over all targets, not the selection, so that a name never
    depends on what else was picked; where two suffixes would share a short name (recipes of
    two CUDA versions in one checkout) both keep their CUDA."""
    wanted: dict[str, str] = {}
    for target in targets:
        wanted.setdefault(target.suffix, short_name(target))
    count: dict[str, int] = {}
    for name in wanted.values():
        count[name] = count.get(name, 0) + 1
    return {
        suffix: name if count[name] == 1 else suffix.replace("python", "py", 1)
        for suffix, name in wanted.items()
    }


# --- GitHub output ---------------------------------------------------------------------------


Row = dict[str, Any]  # one entry as JSON data


def rows(entries: Iterable[Entry]) -> list[Row]:
    return [e.to_json() for e in entries]


def matrix_text(matrix_rows: Sequence[Row]) -> str:
    """The matrix for people: one compact entry per line, so it reads and diffs by entry
    (and json's C encoder does the work: indenting would take its slow pure-Python path)."""
    if not matrix_rows:
        return '{"include": []}\n'
    lines = ",\n  ".join(json.dumps(row) for row in matrix_rows)
    return '{"include": [\n  ' + lines + "\n]}\n"
