"""Variants grouped into stacks. Pure functions.

A *stack* is one PyTorch variant with the dependent variants of the same name suffix
(torchvision-X, torchaudio-X): they build in that order on one runner. Apart from `variants`
so that what only lists variants (every `ci-tools matrix`) does not create its record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ci_tools.catalog.model import Platform
from ci_tools.catalog.variants import Variant


@dataclass(frozen=True, kw_only=True)
class Stack:
    """Variants that build in order on one runner: the base package first."""

    variants: tuple[Variant, ...]

    @property
    def base(self) -> Variant:
        return self.variants[0]

    @property
    def suffix(self) -> str:
        return self.base.suffix

    @property
    def platform(self) -> Platform:
        return self.base.platform

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variants)


def stacks(variants: Iterable[Variant]) -> tuple[Stack, ...]:
    """Group variants into stacks; a dependent without its base forms a stack of its own."""
    groups: dict[str, list[Variant]] = {}
    for variant in variants:
        groups.setdefault(variant.suffix, []).append(variant)
    out = []
    for members in groups.values():
        ordered = sorted(members, key=lambda v: (v.package.requires is not None, v.package.name))
        out.append(Stack(variants=tuple(ordered)))
    return tuple(out)
