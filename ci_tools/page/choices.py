"""The selector page's questions, and the plain facts each answer to them stands for. Pure.

A person picks a machine, a GPU, a CPU, a driver, a branch, a Python and a workload; detect
answers plain facts. Each pick maps to facts here, once, from the catalog:

* a CPU is the set of the platform's ISAs whose `cpuinfo` flags it has (its *fit set*): that is
  all detect's choice reads of the flags. Every fit set a CPU can have is one of the closed sets
  below, and its canonical flags (the union of its ISAs' flags) give exactly that set back;
* a GPU is its SM, or a compute capability the catalog does not know: older, newer, or between
  the known ones (the answer is the same within each, save the capability it names);
* a driver is a class between the catalog's `min_driver` thresholds (or not known).

Where an answer names the capability or the driver itself, the page's table holds it with a
marker in its place (`CC_MARKER`, `DRIVER_MARKER`), computed for a representative value that
no catalog text contains.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ci_tools.catalog.model import Catalog, Gpu, Isa, Platform, version_key
from ci_tools.host.candidates import Built
from ci_tools.host.facts import MACHINES

MACHINE_LABELS = {
    "x86_64": "Linux, x86_64",
    "aarch64": "Linux, aarch64 (ARM)",
    "arm64-darwin": "macOS, Apple Silicon",
}
CC_MARKER = "\u27eacc\u27eb"
DRIVER_MARKER = "\u27eadriver\u27eb"
NO_GPU = "none"
UNKNOWN_CC = ("cc-older", "cc-between", "cc-newer")


@dataclass(frozen=True, kw_only=True)
class CpuClass:
    key: str  # the fit set: its ISA names, sorted, joined by "+" ("none" for the empty set)
    label: str
    isas: tuple[str, ...]
    flags: tuple[str, ...]  # the canonical /proc/cpuinfo flags: its ISAs' together


def fit_key(isas: Iterable[str]) -> str:
    return "+".join(sorted(isas)) or "none"


def platform_isas(catalog: Catalog, platform: Platform) -> list[Isa]:
    return sorted(
        (i for i in catalog.isas.values() if i.platform is platform),
        key=lambda i: (i.level, i.name),
    )


def flags_of(isas: Iterable[Isa]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(flag for isa in isas for flag in isa.cpuinfo))


def fits(isas: Sequence[Isa], flags: Iterable[str]) -> tuple[Isa, ...]:
    have = set(flags)
    return tuple(i for i in isas if set(i.cpuinfo) <= have)


def fit_sets(catalog: Catalog, platform: Platform) -> list[CpuClass]:
    """Every fit set a CPU of `platform` can have: the closures of all subsets of its ISAs."""
    isas = platform_isas(catalog, platform)
    found: dict[str, CpuClass] = {}
    for size in range(len(isas) + 1):
        for subset in itertools.combinations(isas, size):
            members = fits(isas, flags_of(subset))
            key = fit_key(i.name for i in members)
            if key not in found:
                found[key] = CpuClass(
                    key=key,
                    label=_label(members),
                    isas=tuple(i.name for i in members),
                    flags=flags_of(members),
                )
    return sorted(found.values(), key=lambda c: (len(c.isas), c.key))


def named_classes(catalog: Catalog, platform: Platform) -> list[CpuClass]:
    """The CPUs the page offers by name: each ISA with what a CPU that has it has below it
    (the general ISAs of lower levels), and one CPU with every ISA of the platform."""
    isas = platform_isas(catalog, platform)
    by_key = {c.key: c for c in fit_sets(catalog, platform)}
    out: dict[str, CpuClass] = {}
    for isa in isas:
        below = [j for j in isas if j.level <= isa.level and (j.workload is None or j is isa)]
        key = fit_key(j.name for j in fits(isas, flags_of(below)))
        out.setdefault(key, by_key[key])
    everything = fit_key(i.name for i in isas)
    out.setdefault(everything, by_key[everything])
    return list(out.values())


def default_class(catalog: Catalog, platform: Platform) -> str:
    """The CPU the page starts with: one with only the platform's lowest general ISA, which
    every CPU of the platform the catalog builds for runs. A person who keeps the defaults
    gets a build their CPU runs, never one for AVX-512 that many desktops and laptops lack."""
    isas = platform_isas(catalog, platform)
    general = [i for i in isas if i.workload is None]
    if not general:
        return "none"
    lowest = [j for j in general if j.level == general[0].level]
    return fit_key(j.name for j in fits(isas, flags_of(lowest)))


def _label(members: Sequence[Isa]) -> str:
    if not members:
        return "none of the catalog's instruction sets"
    top = max(i.level for i in members)
    highest = [i for i in members if i.level == top]
    return " + ".join(i.description for i in highest)


def driver_thresholds(catalog: Catalog) -> tuple[int, ...]:
    """The known least drivers (an unknown one divides no class: it blocks nothing)."""
    known = {t.min_driver for b in catalog.branches.values() for t in b.toolkits}
    return tuple(sorted(d for d in known if d is not None))


def driver_class(driver: str | None, thresholds: Sequence[int]) -> int:
    """0 for a driver not known, else 1 + how many thresholds the driver's branch reaches."""
    if driver is None:
        return 0
    major = int(driver.split(".")[0])
    return 1 + sum(1 for t in thresholds if major >= t)


def driver_representatives(thresholds: Sequence[int], variant: int = 0) -> list[str | None]:
    """A driver version for each class, with digits no catalog text holds (see module doc);
    `variant` picks another set, to prove an answer does not depend on which one."""
    tail = f".{9999 - variant}.{9999 - variant}"
    lows = [thresholds[0] - 1 if thresholds else 1, *thresholds]
    return [None, *(f"{max(low, 10)}{tail}" for low in lows)]


def known_capabilities(catalog: Catalog) -> list[str]:
    return sorted((g.capability for g in catalog.gpus.values()), key=version_key)


def unknown_cc_class(capability: str, known: Sequence[str]) -> str:
    key = version_key(capability)
    if key < version_key(known[0]):
        return "cc-older"
    if key > version_key(known[-1]):
        return "cc-newer"
    return "cc-between"


def cc_representatives(known: Sequence[str], avoid: str, variant: int = 0) -> dict[str, str]:
    """A capability in each unknown class that the catalog's text holds nowhere."""
    minor = 77 + variant
    oldest, newest = version_key(known[0]), version_key(known[-1])
    reps = {"cc-older": f"0.{minor}", "cc-newer": f"999.{minor}"}
    for major in range(oldest[0], newest[0] + 1):
        candidate = f"{major}.{minor}"
        if candidate not in known and oldest < version_key(candidate) < newest:
            reps["cc-between"] = candidate
            break
    for rep in reps.values():
        if rep in avoid:
            raise ValueError(f"the catalog's text holds {rep}; pick other representatives")
    return reps


@dataclass(frozen=True, kw_only=True)
class Machine:
    id: str
    platform: Platform
    label: str


def machines() -> list[Machine]:
    return [Machine(id=m, platform=p, label=MACHINE_LABELS.get(m, m)) for m, p in MACHINES.items()]


def unavailable(
    catalog: Catalog, built: Built, branch: str, machine: Machine, gpu: Gpu, package: str
) -> str | None:
    """Why `branch` has no `package` for `gpu` on `machine`, in a few words; None when it has.
    The page dims the options that lead there and says this."""
    if machine.platform is Platform.AARCH64_DARWIN:
        return "macOS builds use Metal (MPS), not CUDA"
    found = [v for v in built.by_target.get((package, gpu.name), ()) if v.branch.name == branch]
    if any(v.platform is machine.platform for v in found):
        return None
    if found:
        platforms = sorted({v.platform.value for v in found})
        return f"{gpu.name} builds are for {', '.join(platforms)} only"
    the_branch = catalog.branch(branch)
    cudas = [t.cuda_short for t in the_branch.toolkits]
    if not any(gpu.supports_cuda(c) for c in cudas):
        if gpu.min_cuda is not None and all(
            version_key(c) < version_key(gpu.min_cuda) for c in cudas
        ):
            return f"{gpu.name} needs CUDA >= {gpu.min_cuda}; {branch} has {', '.join(cudas)}"
        return f"{gpu.name} needs CUDA <= {gpu.max_cuda}; {branch} has {', '.join(cudas)}"
    return f"{branch} builds no {gpu.name} {package}"
