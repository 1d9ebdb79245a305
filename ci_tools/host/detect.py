"""Which variant fits a machine: host facts + catalog -> recommendations. Pure, no I/O.

Seed 001's "Variant Selection Guide" as code, with the catalog deciding wherever it can: an
ISA fits when the host has every `cpuinfo` flag the catalog lists for it, the workload ISAs
(`workload:`) are only considered for their workload, and among the ISAs that fit and that the
branch builds for the GPU (or CPU-only), the highest `level` wins.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ci_tools.base.errors import InputError
from ci_tools.catalog import variants
from ci_tools.catalog.model import Catalog, Gpu, Isa, Kind, Platform, version_key
from ci_tools.host.facts import MACHINES, Host, HostGpu

# Callers name the host's facts through detect, whose inputs they are.
__all__ = [
    "GENERAL",
    "MACHINES",
    "Alternative",
    "Detection",
    "GpuGroup",
    "Host",
    "HostGpu",
    "IsaChoice",
    "Recommendation",
    "choose_isa",
    "detect",
    "group_gpus",
    "workloads",
]

GENERAL = "general"


@dataclass(frozen=True, kw_only=True)
class GpuGroup:
    """The GPUs of one compute capability: they share one recommendation."""

    names: tuple[str, ...]  # distinct names, in the order nvidia-smi lists them
    count: int
    capability: str | None
    sm: str | None
    family: str | None

    @property
    def label(self) -> str:
        if not self.names:
            return f"compute capability {self.capability}"
        name = " + ".join(self.names)
        return f"{self.count} x {name}" if self.count > 1 else name


@dataclass(frozen=True, kw_only=True)
class Alternative:
    branch: str
    package: str


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    gpu: GpuGroup | None
    package: str | None  # the variant's name; None when nothing on the branch fits
    isa: str | None
    reason: str
    alternatives: tuple[Alternative, ...] = ()  # other branches that have a fitting variant
    fallback: str | None = None  # the CPU variant, for a GPU no build targets


@dataclass(frozen=True, kw_only=True)
class Detection:
    branch: str
    package: str
    python: str
    workload: str
    machine: str
    platform: Platform | None
    recommendations: tuple[Recommendation, ...]
    warnings: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return all(r.package is not None for r in self.recommendations)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def workloads(catalog: Catalog) -> tuple[str, ...]:
    """`general` and every workload an ISA of the catalog is meant for."""
    named = sorted({i.workload for i in catalog.isas.values() if i.workload is not None})
    return (GENERAL, *named)


def detect(
    catalog: Catalog, host: Host, *, branch: str, package: str = "pytorch", workload: str = GENERAL
) -> Detection:
    """Recommend one variant of `package` on `branch` per GPU capability (or one CPU/MPS)."""
    the_branch = catalog.branch(branch)
    if package not in catalog.packages:
        raise InputError(
            f'--package: unknown package "{package}"; {catalog.display_name} has '
            f"{', '.join(catalog.packages)}"
        )
    if workload not in workloads(catalog):
        raise InputError(
            f'--workload: unknown workload "{workload}"; use one of {", ".join(workloads(catalog))}'
        )
    platform = MACHINES.get(host.machine)
    warnings = list(host.warnings)
    groups = group_gpus(catalog, host.gpus)
    if len(groups) > 1:
        caps = ", ".join(
            f"{g.capability or '?'}" + (f" ({' + '.join(g.names)})" if g.names else "")
            for g in groups
        )
        warnings.append(
            f"GPUs of {len(groups)} compute capabilities ({caps}): one recommendation each; "
            "a variant targets one SM, so use each on its own GPU (CUDA_VISIBLE_DEVICES)"
        )
    ctx = _Context(catalog=catalog, package=package, workload=workload, host=host)
    if platform is None or platform is Platform.AARCH64_DARWIN or not groups:
        recs = [ctx.recommend(branch, platform, None)]
    else:
        recs = [ctx.recommend(branch, platform, g) for g in groups]
    return Detection(
        branch=branch,
        package=package,
        python=_python(the_branch.python),
        workload=workload,
        machine=host.machine,
        platform=platform,
        recommendations=tuple(recs),
        warnings=tuple(warnings),
    )


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


def _python(pythons: Iterable[str]) -> str:
    """The newest Python a branch builds: what detect recommends."""
    return max(pythons, key=version_key)


@dataclass(frozen=True, kw_only=True)
class _Offer:
    """The variants of one package and Python on one branch, by what they target."""

    cpu: dict[str, str]  # isa -> variant name
    gpu: dict[str, dict[str, str]]  # sm -> isa -> variant name
    darwin: str | None


@dataclass(frozen=True, kw_only=True)
class IsaChoice:
    isa: Isa | None
    notes: tuple[str, ...]  # when one is chosen, why the others a person would ask about were not


@dataclass(frozen=True, kw_only=True)
class _Outcome:
    rec: Recommendation
    detail: str = ""  # the reason without the GPU / host lead, for naming other branches
    # False when no branch could do better (an unknown GPU, an unsupported machine).
    branch_specific: bool = True
    # Whether the branch builds the GPU's SM (or CPU-only, or MPS) at all.
    target_built: bool = True


@dataclass(frozen=True, kw_only=True)
class _Context:
    catalog: Catalog
    package: str
    workload: str
    host: Host

    def recommend(
        self, branch: str, platform: Platform | None, group: GpuGroup | None
    ) -> Recommendation:
        outcome = self._on_branch(branch, platform, group)
        if outcome.rec.package is not None or not outcome.branch_specific:
            return outcome.rec
        found, elsewhere = [], []
        for other in self.catalog.branches:
            if other == branch:
                continue
            alt = self._on_branch(other, platform, group)
            if alt.rec.package is not None:
                found.append(Alternative(branch=other, package=alt.rec.package))
            elif alt.target_built and not outcome.target_built:
                # Why a branch that does build the target still does not fit: news here.
                elsewhere.append(alt.detail)
        if found:
            tail = "branches with one: " + ", ".join(f"{a.branch} ({a.package})" for a in found)
        elif elsewhere:
            tail = "no branch has one (" + "; ".join(elsewhere) + ")"
        else:
            tail = "no branch has one"
        rec = outcome.rec
        return Recommendation(
            gpu=rec.gpu,
            package=None,
            isa=None,
            reason=f"{rec.reason}; {tail}",
            alternatives=tuple(found),
            fallback=rec.fallback,
        )

    def _offer(self, branch: str) -> _Offer:
        the_branch = self.catalog.branch(branch)
        python = _python(the_branch.python)
        cpu: dict[str, str] = {}
        gpu: dict[str, dict[str, str]] = {}
        darwin = None
        for v in variants.expand(self.catalog, branch):
            if v.package.name != self.package or v.python != python:
                continue
            if v.kind is Kind.DARWIN:
                darwin = v.name
            elif v.kind is Kind.CPU and v.isa is not None:
                cpu[v.isa.name] = v.name
            elif v.gpu is not None and v.isa is not None:
                gpu.setdefault(v.gpu.name, {})[v.isa.name] = v.name
        return _Offer(cpu=cpu, gpu=gpu, darwin=darwin)

    def _on_branch(
        self, branch: str, platform: Platform | None, group: GpuGroup | None
    ) -> _Outcome:
        if platform is None:
            known = ", ".join(MACHINES)
            return _Outcome(
                rec=Recommendation(
                    gpu=None,
                    package=None,
                    isa=None,
                    reason=f"no variant is built for {self.host.machine} machines "
                    f"(the catalog builds for {known})",
                ),
                branch_specific=False,
            )
        offer = self._offer(branch)
        if platform is Platform.AARCH64_DARWIN:
            return self._darwin(branch, offer)
        if group is None:
            return self._cpu(branch, platform, offer, self.host.no_gpu_note)
        return self._gpu(branch, platform, offer, group)

    def _darwin(self, branch: str, offer: _Offer) -> _Outcome:
        if offer.darwin is None:
            detail = f"{branch} builds no darwin-mps {self.package}"
            reason = f"macOS on Apple Silicon: {detail}"
            return _Outcome(
                rec=Recommendation(gpu=None, package=None, isa=None, reason=reason),
                detail=detail,
                target_built=False,
            )
        reason = "macOS on Apple Silicon: the Metal (MPS) build"
        return _Outcome(rec=Recommendation(gpu=None, package=offer.darwin, isa=None, reason=reason))

    def _cpu(self, branch: str, platform: Platform, offer: _Offer, lead: str) -> _Outcome:
        if not offer.cpu:
            detail = f"{branch} builds no CPU-only {self.package}"
            return _Outcome(
                rec=Recommendation(gpu=None, package=None, isa=None, reason=f"{lead}: {detail}"),
                detail=detail,
                target_built=False,
            )
        where = f"the CPU-only {self.package} on {branch}"
        choice = choose_isa(
            self.catalog, platform, self.host.cpu_flags, self.workload, offer.cpu, where
        )
        return self._outcome(lead, None, choice, offer.cpu, where, platform)

    def _gpu(self, branch: str, platform: Platform, offer: _Offer, group: GpuGroup) -> _Outcome:
        if group.capability is None:
            reason = (
                f"{group.label}: nvidia-smi reports no compute capability ([N/A]); "
                "pass --gpu-cc X.Y to say which GPU this is"
            )
            return _Outcome(
                rec=Recommendation(gpu=group, package=None, isa=None, reason=reason),
                branch_specific=False,
            )
        if group.sm is None:
            return self._unknown_gpu(branch, platform, offer, group)
        gpu = self.catalog.gpus[group.sm]
        lead = f"{group.label} ({gpu.name}, {gpu.family})"
        built = offer.gpu.get(gpu.name)
        if built is None:
            the_branch = self.catalog.branch(branch)
            detail = f"{branch} (CUDA {the_branch.cuda}) has no {gpu.name} {self.package}"
            bound = _cuda_bound(gpu, the_branch.cuda)
            if bound:
                detail += f" ({gpu.name} {bound})"
            return _Outcome(
                rec=Recommendation(gpu=group, package=None, isa=None, reason=f"{lead}: {detail}"),
                detail=detail,
                target_built=False,
            )
        where = f"{gpu.name} on {branch}"
        choice = choose_isa(
            self.catalog, platform, self.host.cpu_flags, self.workload, built, where
        )
        return self._outcome(lead, group, choice, built, where, platform)

    def _unknown_gpu(
        self, branch: str, platform: Platform, offer: _Offer, group: GpuGroup
    ) -> _Outcome:
        assert group.capability is not None
        cap = version_key(group.capability)
        known = sorted(self.catalog.gpus.values(), key=lambda g: version_key(g.capability))
        newest, oldest = known[-1], known[0]
        if cap > version_key(newest.capability):
            why = (
                f"newer than any SM the catalog knows (newest: {newest.name}, "
                f"{newest.capability}); no build targets it yet"
            )
        elif cap < version_key(oldest.capability):
            why = (
                f"older than any SM the catalog builds (oldest: {oldest.name}, "
                f"{oldest.capability}): unsupported"
            )
        else:
            caps = ", ".join(g.capability for g in known)
            why = f"not one the catalog builds (known: {caps})"
        reason = f"compute capability {group.capability} is {why}"
        if group.names:
            reason = f"{group.label}: {reason}"
        cpu = self._cpu(branch, platform, offer, "").rec.package
        if cpu is not None:
            reason += f"; the CPU-only {cpu} runs here without the GPU"
        return _Outcome(
            rec=Recommendation(gpu=group, package=None, isa=None, reason=reason, fallback=cpu),
            branch_specific=False,
        )

    def _outcome(
        self,
        lead: str,
        group: GpuGroup | None,
        choice: IsaChoice,
        built: dict[str, str],
        where: str,
        platform: Platform,
    ) -> _Outcome:
        if choice.isa is None:
            detail = f"{where} {self._misfit(platform, built)}"
            return _Outcome(
                rec=Recommendation(gpu=group, package=None, isa=None, reason=f"{lead}: {detail}"),
                detail=detail,
            )
        isa = choice.isa
        parts = [lead, f"{isa.name}: {' '.join(isa.cpuinfo)} present", *choice.notes]
        return _Outcome(
            rec=Recommendation(
                gpu=group, package=built[isa.name], isa=isa.name, reason="; ".join(parts)
            )
        )

    def _misfit(self, platform: Platform, built: Collection[str]) -> str:
        """Why none of the ISAs `built` offers suits this host."""
        isas = [self.catalog.isas[name] for name in built]
        here = [i for i in isas if i.platform == platform]
        if not here:
            platforms = ", ".join(sorted({i.platform.value for i in isas}))
            return (
                f"is built only for {', '.join(built)} ({platforms}), "
                f"not for this {platform} machine"
            )
        # The other workloads' ISAs would only repeat what the general ones say.
        here = [i for i in here if i.workload in (None, self.workload)] or here
        why = []
        for isa in here:
            lacking = [f for f in isa.cpuinfo if f not in self.host.cpu_flags]
            if lacking:
                why.append(f"{isa.name} needs {' '.join(lacking)}")
            else:
                why.append(f"{isa.name} is for workload {isa.workload}")
        return f"is built for {', '.join(i.name for i in here)}; none suits this host ({'; '.join(why)})"


def _cuda_bound(gpu: Gpu, cuda: str) -> str:
    if gpu.supports_cuda(cuda):
        return ""
    if gpu.min_cuda is not None and version_key(cuda)[:2] < version_key(gpu.min_cuda):
        return f"needs CUDA >= {gpu.min_cuda}"
    return f"needs CUDA <= {gpu.max_cuda}"


def choose_isa(
    catalog: Catalog,
    platform: Platform,
    flags: frozenset[str],
    workload: str,
    built: Collection[str],
    where: str,
) -> IsaChoice:
    """The highest-level ISA of `platform` that the host's `flags` run, that `built` offers and
    that `workload` may use (general ISAs, or those meant for this workload).

    The notes explain the next general level up, the workload's own ISA when it lost, and the
    other workloads' ISAs the host could run (a hint for --workload). `where` names the build
    (e.g. "sm61 on main") in "not built for ..." notes.
    """
    isas = sorted(
        (i for i in catalog.isas.values() if i.platform == platform),
        key=lambda i: (i.level, i.name),
    )

    def missing(isa: Isa) -> list[str]:
        return [f for f in isa.cpuinfo if f not in flags]

    def usable(isa: Isa) -> bool:
        return not missing(isa) and isa.name in built

    eligible = [i for i in isas if usable(i) and i.workload in (None, workload)]
    # A workload ISA beats a general one of the same level: it was asked for.
    chosen = max(eligible, key=lambda i: (i.level, i.workload is not None), default=None)
    if chosen is None:
        return IsaChoice(isa=None, notes=())
    higher = [i.level for i in isas if i.workload is None and i.level > chosen.level]
    next_level = min(higher, default=None)

    def why_not(isa: Isa) -> str:
        lacking = missing(isa)
        if lacking:
            return f"{isa.name} not available: no {' '.join(lacking)}"
        return f"{isa.name} not built for {where}"

    notes = []
    for isa in isas:
        if isa is chosen:
            continue
        if isa.workload is None:
            if isa.level == next_level:
                notes.append(why_not(isa))
        elif isa.workload == workload:
            notes.append(f"{why_not(isa)} (wanted for {workload}, using {chosen.name})")
        elif usable(isa):
            notes.append(f"{isa.name} not chosen: workload {workload} (it is for {isa.workload})")
    return IsaChoice(isa=chosen, notes=tuple(notes))
