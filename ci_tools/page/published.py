"""Which variants a release published, and for each one it did not, the published variant
nearest to it: what the page shows instead of an install line that would fail. Pure.

Nearest: of the same package, platform and GPU target (SM, or CPU only, or Apple), an
instruction set no higher than its own (a build for a lower one runs on the same machine),
on its branch first, then of its Python, then the highest instruction set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ci_tools.catalog.variants import Variant


def key(variant: Variant) -> str:
    return f"{variant.branch.name}/{variant.name}"


def _level(variant: Variant) -> int:
    return variant.isa.level if variant.isa is not None else 0


def _same_target(a: Variant, b: Variant) -> bool:
    sm = (a.gpu.name if a.gpu else None) == (b.gpu.name if b.gpu else None)
    return a.package.name == b.package.name and a.platform is b.platform and a.kind is b.kind and sm


def nearest(variant: Variant, published: Sequence[Variant]) -> Variant | None:
    fits = [p for p in published if _same_target(p, variant) and _level(p) <= _level(variant)]
    if not fits:
        return None
    return max(
        fits,
        key=lambda p: (p.branch.name == variant.branch.name, p.python == variant.python, _level(p)),
    )


def publication(
    variants: Sequence[Variant], facts: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any] | None:
    """None without records (nothing is known of publishing); else the published keys and,
    for every other variant, the key of its nearest published one (None: none is)."""
    if not facts:
        return None
    done = [v for v in variants if (facts.get(key(v)) or {}).get("org")]
    near = {key(v): nearest(v, done) for v in variants if v not in done}
    return {
        "published": sorted(key(v) for v in done),
        "nearest": {k: key(v) if v is not None else None for k, v in near.items()},
    }
