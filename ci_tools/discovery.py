"""Variants of a build repository that has recipes but no catalog, from the recipe file names.

`.flox/pkgs/<name>.nix` is the variant `<name>` (DESIGN §2.4); the name alone gives its
package, Python, kind, SM and ISA, the ISA gives the platform, and the default ISA table
below gives the CPU flags a host needs to run it. This lets `ci-tools matrix` drive existing
build repositories as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tools import names
from ci_tools.matrix import Target

# The package every other package of a stack builds against.
BASE_PACKAGE = "pytorch"

# /proc/cpuinfo flags per ISA (DESIGN §2.3); the shipped catalog's `isas` hold the same, a
# test keeps them equal. An ISA missing here still builds; its test step says why it is none.
DEFAULT_CPUINFO: Mapping[str, tuple[str, ...]] = {
    "avx": ("avx",),
    "avx2": ("avx2", "fma", "f16c"),
    "avx512": ("avx512f", "avx512dq", "avx512vl", "avx512bw"),
    "avx512bf16": ("avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_bf16"),
    "avx512vnni": ("avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_vnni"),
    "armv8_2": ("fphp", "asimdhp", "asimddp"),
    "armv9": ("sve", "sve2"),
}


@dataclass(frozen=True, kw_only=True)
class Discovered:
    targets: tuple[Target, ...]
    ignored: tuple[str, ...]  # recipe files whose names do not follow the grammar


def discover(pkgs_dir: Path) -> Discovered:
    """The variants whose recipes lie directly in `pkgs_dir` (its `lib/` is shared code)."""
    files = sorted(p.name for p in pkgs_dir.glob("*.nix") if p.is_file())
    return from_file_names(files)


def from_file_names(files: Iterable[str]) -> Discovered:
    parsed: list[names.ParsedName] = []
    ignored: list[str] = []
    for file in files:
        found = names.parse_name(file.removesuffix(".nix"))
        if found is None:
            ignored.append(file)
        else:
            parsed.append(found)
    present = {p.name for p in parsed}
    targets = tuple(_target(p, present) for p in parsed)
    return Discovered(targets=targets, ignored=tuple(ignored))


def _target(parsed: names.ParsedName, present: set[str]) -> Target:
    base = f"{BASE_PACKAGE}-{parsed.suffix}"
    return Target(
        name=parsed.name,
        package=parsed.package,
        base=base if parsed.package != BASE_PACKAGE and base in present else None,
        suffix=parsed.suffix,
        python=parsed.python,
        kind=parsed.kind,
        platform=parsed.platform,
        sm=parsed.sm,
        isa=parsed.isa,
        cpuinfo=DEFAULT_CPUINFO.get(parsed.isa) if parsed.isa is not None else None,
    )
