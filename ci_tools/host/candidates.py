"""Every variant of the catalog that could serve a host, each judged: it fits, or why not.

Pure: host facts + catalog -> candidates. A recommendation is for a target: the GPUs of one
compute capability (target: their SM), or the machine itself (`CPU_ONLY`, or `MPS` on Apple
Silicon). For every branch and target the host has, the candidates are the variants of the
package at the Python asked about (else the branch's newest) built for that target, each with
the verdict on its ISA (it fits when the host has every `cpuinfo` flag the catalog lists for
it and it is general or meant for the workload asked about) and on the driver (a GPU variant
needs the NVIDIA driver branch its toolkit's `min_driver` names, where the driver is known).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from ci_tools.catalog import variants
from ci_tools.catalog.model import Branch, Catalog, Isa, Kind, Platform, version_key
from ci_tools.catalog.variants import Variant
from ci_tools.host.facts import Host, HostGpu

CPU_ONLY = "cpu"
MPS = "darwin-mps"


class Fit(StrEnum):
    FITS = "fits"  # the host runs it, and it is general or meant for the workload
    OTHER_WORKLOAD = "other workload"  # the host runs it; it is meant for another workload
    MISSING_FLAGS = "missing flags"  # the CPU lacks cpuinfo flags the ISA needs
    OTHER_PLATFORM = "other platform"  # built for another kind of machine


@dataclass(frozen=True, kw_only=True)
class IsaFit:
    """One ISA of the catalog, judged against a host and a workload."""

    isa: Isa
    fit: Fit
    missing: tuple[str, ...] = ()  # the ISA's cpuinfo flags the host lacks, in catalog order

    @property
    def runs(self) -> bool:
        return self.fit in (Fit.FITS, Fit.OTHER_WORKLOAD)

    @property
    def why_not(self) -> str | None:
        if self.fit is Fit.MISSING_FLAGS:
            # Every flag it needs, not only the missing ones: the words then depend on which
            # ISAs a CPU has and nothing else, so the selector page, which knows no more of a
            # CPU, says exactly what detect says.
            return f"{self.isa.name} needs {' '.join(self.isa.cpuinfo)}"
        if self.fit is Fit.OTHER_WORKLOAD:
            return f"{self.isa.name} is for workload {self.isa.workload}"
        if self.fit is Fit.OTHER_PLATFORM:
            return f"{self.isa.name} is for {self.isa.platform} machines"
        return None


def judge_isa(isa: Isa, host: Host, workload: str) -> IsaFit:
    if isa.platform != host.platform:
        return IsaFit(isa=isa, fit=Fit.OTHER_PLATFORM)
    missing = tuple(f for f in isa.cpuinfo if f not in host.cpu_flags)
    if missing:
        return IsaFit(isa=isa, fit=Fit.MISSING_FLAGS, missing=missing)
    if isa.workload not in (None, workload):
        return IsaFit(isa=isa, fit=Fit.OTHER_WORKLOAD)
    return IsaFit(isa=isa, fit=Fit.FITS)


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One variant a host could be told to install."""

    variant: str
    branch: str
    target: str  # an SM ("sm90"), CPU_ONLY or MPS
    isa: IsaFit | None  # None: the MPS build, which has no CPU ISA to judge
    min_driver: int | None = None  # the NVIDIA driver branch a GPU variant needs
    driver_ok: bool = True  # False: the host's known driver is older than min_driver

    @property
    def fits(self) -> bool:
        return self.driver_ok and (self.isa is None or self.isa.fit is Fit.FITS)

    @property
    def why_not(self) -> str | None:
        isa = None if self.isa is None else self.isa.why_not
        if isa is None and not self.driver_ok:
            return f"needs NVIDIA driver >= {self.min_driver}"
        return isa


@dataclass(frozen=True, kw_only=True)
class GpuGroup:
    """The GPUs of one compute capability: they share one recommendation."""

    names: tuple[str, ...]  # distinct names, in the order nvidia-smi lists them
    count: int
    capability: str | None
    sm: str | None  # None: a capability the catalog does not know
    family: str | None

    @property
    def label(self) -> str:
        if not self.names:
            return f"compute capability {self.capability}"
        name = " + ".join(self.names)
        return f"{self.count} x {name}" if self.count > 1 else name


def group_gpus(catalog: Catalog, gpus: Iterable[HostGpu]) -> tuple[GpuGroup, ...]:
    by_cap: dict[str | None, list[HostGpu]] = {}
    for gpu in gpus:
        by_cap.setdefault(gpu.capability, []).append(gpu)
    out = []
    for capability, members in by_cap.items():
        known = catalog.gpu_by_capability(capability) if capability is not None else None
        names = tuple(dict.fromkeys(g.name for g in members if g.name))
        out.append(
            GpuGroup(
                names=names,
                count=len(members),
                capability=capability,
                sm=known.name if known else None,
                family=known.family if known else None,
            )
        )
    return tuple(out)


def newest_python(pythons: Iterable[str]) -> str:
    """The newest Python a branch builds: the one detect recommends unless asked for another."""
    return max(pythons, key=version_key)


def python_on(branch: Branch, python: str | None) -> str | None:
    """The Python whose variants serve on `branch`: the one asked for (None where the branch
    does not build it), else the branch's newest."""
    if python is None:
        return newest_python(branch.python)
    return python if python in branch.python else None


def every_variant(catalog: Catalog) -> tuple[variants.Variant, ...]:
    """Every variant of every branch, in catalog order."""
    return tuple(v for name in catalog.branches for v in variants.expand(catalog, name))


@dataclass(frozen=True, kw_only=True)
class Built:
    """Every variant of a catalog with its target, by package: gather's input, which a caller
    asking many questions of one catalog builds once (`Built.of`)."""

    every: tuple[variants.Variant, ...]
    by_target: Mapping[tuple[str, str], tuple[variants.Variant, ...]]  # (package, target)

    @classmethod
    def of(cls, catalog: Catalog) -> Built:
        every = every_variant(catalog)
        by_target: dict[tuple[str, str], list[variants.Variant]] = {}
        for v in every:
            by_target.setdefault((v.package.name, _target_of(v)), []).append(v)
        return cls(every=every, by_target={k: tuple(v) for k, v in by_target.items()})


@dataclass(frozen=True, kw_only=True)
class Candidates:
    """What a host could install of one package, for one workload, on every branch."""

    host: Host
    package: str
    workload: str
    isas: tuple[IsaFit, ...]  # every ISA of the catalog, by (level, name)
    gpus: tuple[GpuGroup, ...]
    by_target: Mapping[tuple[str, str], tuple[Candidate, ...]]  # (branch, target) -> in order
    pythons: Mapping[str, str | None]  # branch -> the Python of its candidates (None: none)
    python: str | None = None  # the Python asked about; None: each branch's newest

    def on(self, branch: str, target: str) -> tuple[Candidate, ...]:
        """The variants `branch` builds for `target`, in catalog order; empty: none."""
        return self.by_target.get((branch, target), ())


def gather(
    catalog: Catalog,
    host: Host,
    *,
    package: str,
    workload: str,
    python: str | None = None,
    built: Built | None = None,
) -> Candidates:
    """The candidates for every target `host` has; none for a machine the catalog does not
    build for. The package and workload must be the catalog's (detect checks them); `built`
    is Built.of(catalog), made here when not given."""
    isas = sorted(catalog.isas.values(), key=lambda i: (i.level, i.name))
    judged = {i.name: judge_isa(i, host, workload) for i in isas}
    groups = group_gpus(catalog, host.gpus)
    targets = _targets(host.platform, groups)
    pythons = {b.name: python_on(b, python) for b in catalog.branches.values()}
    by_target: dict[tuple[str, str], list[Candidate]] = {}
    every = built if built is not None else Built.of(catalog)
    driver = host.driver_major
    for target in sorted(targets):
        for v in every.by_target.get((package, target), ()):
            if v.python == pythons[v.branch.name]:
                candidate = _candidate(v, target, judged, driver)
                by_target.setdefault((v.branch.name, target), []).append(candidate)
    return Candidates(
        host=host,
        package=package,
        workload=workload,
        isas=tuple(judged.values()),
        gpus=groups,
        by_target={key: tuple(found) for key, found in by_target.items()},
        pythons=pythons,
        python=python,
    )


def _candidate(
    v: variants.Variant, target: str, judged: Mapping[str, IsaFit], driver: int | None
) -> Candidate:
    fit = judged[v.isa.name] if v.isa is not None else None
    min_driver = v.toolkit.min_driver if v.kind is Kind.GPU and v.toolkit is not None else None
    return Candidate(
        variant=v.name,
        branch=v.branch.name,
        target=target,
        isa=fit,
        min_driver=min_driver,
        driver_ok=driver is None or min_driver is None or driver >= min_driver,
    )


def _targets(platform: Platform | None, groups: Iterable[GpuGroup]) -> frozenset[str]:
    if platform is None:
        return frozenset()
    if platform is Platform.AARCH64_DARWIN:
        return frozenset({MPS})
    # CPU-only serves a machine without a GPU, and one whose GPU no build targets.
    return frozenset({CPU_ONLY, *(g.sm for g in groups if g.sm is not None)})


def _target_of(variant: Variant) -> str:
    if variant.kind is Kind.DARWIN:
        return MPS
    return variant.gpu.name if variant.gpu is not None else CPU_ONLY
