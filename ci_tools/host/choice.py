"""The one variant recommended per target, with the reasons. Pure: candidates -> choice.

Seed 001's "Variant Selection Guide" as code, with the catalog deciding wherever it can: among
the candidates of the branch asked about that the host's driver runs, the fitting ISA of the
highest `level` wins (a workload's own ISA before a general one of its level). When none fits,
the reason says why, and the other branches that have one are named, nearest PyTorch version
first; a GPU that no branch serves gets the CPU-only variant as a fallback.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ci_tools.catalog.model import Catalog, Gpu, Isa, Platform, version_key
from ci_tools.host.candidates import (
    CPU_ONLY,
    MPS,
    Candidate,
    Candidates,
    Fit,
    GpuGroup,
    IsaFit,
)
from ci_tools.host.facts import MACHINES


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
    # Other branches that have a fitting variant, the nearest PyTorch version first.
    alternatives: tuple[Alternative, ...] = ()
    fallback: str | None = None  # the CPU variant, for a GPU no build serves
    # The variants the branch builds for this target, each with why it fits or not.
    candidates: tuple[Candidate, ...] = ()


@dataclass(frozen=True, kw_only=True)
class IsaChoice:
    isa: Isa | None
    notes: tuple[str, ...]  # when one is chosen, why the others a person would ask about were not


def choose(catalog: Catalog, found: Candidates, *, branch: str) -> tuple[Recommendation, ...]:
    """One recommendation per GPU compute capability, or one for the machine (CPU-only, MPS,
    or a machine the catalog builds nothing for)."""
    platform = found.host.platform
    if platform is None or platform is Platform.AARCH64_DARWIN or not found.gpus:
        return (recommend(catalog, found, None, branch=branch),)
    return tuple(recommend(catalog, found, g, branch=branch) for g in found.gpus)


def recommend(
    catalog: Catalog, found: Candidates, group: GpuGroup | None, *, branch: str
) -> Recommendation:
    """The variant of `branch` for `group` (None: the machine itself); when none fits, the
    reason names the branches that have one, or why none does."""
    outcome = _on_branch(catalog, found, group, branch)
    if outcome.rec.package is not None or not outcome.branch_specific:
        return outcome.rec
    others = {
        other: _on_branch(catalog, found, group, other)
        for other in nearest_first(catalog, branch, found.package)
    }
    rec = _elsewhere(outcome, others)
    if rec.alternatives or group is None:
        return rec
    return _with_cpu_fallback(found, branch, rec)


def nearest_first(catalog: Catalog, branch: str, package: str) -> list[str]:
    """The other branches, by how far their `package` version lies from `branch`'s in the
    catalog's versions (a tie goes to the newer): the nearest is the likeliest to suit."""
    ordered = sorted(
        catalog.branches.values(),
        key=lambda b: version_key(b.versions.get(package, "0")),
    )
    place = {b.name: index for index, b in enumerate(ordered)}
    here = place[branch]
    others = [b.name for b in ordered if b.name != branch]
    return sorted(others, key=lambda name: (abs(place[name] - here), -place[name]))


def _with_cpu_fallback(found: Candidates, branch: str, rec: Recommendation) -> Recommendation:
    """No branch serves the GPU: the CPU-only variant still runs the machine, without it."""
    cpu = _cpu(found, branch, "").rec.package
    if cpu is None:
        return rec
    reason = f"{rec.reason}; the CPU-only {cpu} runs here without the GPU"
    return replace(rec, reason=reason, fallback=cpu)


@dataclass(frozen=True, kw_only=True)
class _Outcome:
    rec: Recommendation
    detail: str = ""  # the reason without the GPU / host lead, for naming other branches
    # False when no branch could do better (an unknown GPU, an unsupported machine).
    branch_specific: bool = True
    # Whether the branch builds the GPU's SM (or CPU-only, or MPS) at all.
    target_built: bool = True


def _elsewhere(outcome: _Outcome, others: Mapping[str, _Outcome]) -> Recommendation:
    found, elsewhere = [], []
    for other, alt in others.items():
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
    return replace(outcome.rec, reason=f"{outcome.rec.reason}; {tail}", alternatives=tuple(found))


def _failed(
    group: GpuGroup | None,
    reason: str,
    *,
    detail: str = "",
    target_built: bool = True,
    candidates: tuple[Candidate, ...] = (),
) -> _Outcome:
    rec = Recommendation(gpu=group, package=None, isa=None, reason=reason, candidates=candidates)
    return _Outcome(rec=rec, detail=detail, target_built=target_built)


def _on_branch(
    catalog: Catalog, found: Candidates, group: GpuGroup | None, branch: str
) -> _Outcome:
    platform = found.host.platform
    if found.pythons[branch] is None:
        detail = f"{branch} builds no Python {found.python}"
        return _failed(group, f"{_lead(found, group)}: {detail}", detail=detail, target_built=False)
    if platform is None:
        known = ", ".join(MACHINES)
        reason = (
            f"no variant is built for {found.host.machine} machines "
            f"(the catalog builds for {known})"
        )
        return replace(_failed(None, reason), branch_specific=False)
    if platform is Platform.AARCH64_DARWIN:
        return _darwin(found, branch)
    if group is None:
        return _cpu(found, branch, found.host.no_gpu_note)
    return _gpu(catalog, found, branch, group)


def _lead(found: Candidates, group: GpuGroup | None) -> str:
    if group is not None:
        return group.label
    if found.host.platform is Platform.AARCH64_DARWIN:
        return "macOS on Apple Silicon"
    return found.host.no_gpu_note


def _darwin(found: Candidates, branch: str) -> _Outcome:
    built = found.on(branch, MPS)
    if not built:
        detail = f"{branch} builds no darwin-mps {found.package}"
        return _failed(None, f"macOS on Apple Silicon: {detail}", detail=detail, target_built=False)
    reason = "macOS on Apple Silicon: the Metal (MPS) build"
    rec = Recommendation(
        gpu=None, package=built[-1].variant, isa=None, reason=reason, candidates=built
    )
    return _Outcome(rec=rec)


def _cpu(found: Candidates, branch: str, lead: str) -> _Outcome:
    built = found.on(branch, CPU_ONLY)
    if not built:
        detail = f"{branch} builds no CPU-only {found.package}"
        return _failed(None, f"{lead}: {detail}", detail=detail, target_built=False)
    return _outcome(found, lead, None, built, f"the CPU-only {found.package} on {branch}")


def _gpu(catalog: Catalog, found: Candidates, branch: str, group: GpuGroup) -> _Outcome:
    if group.capability is None:
        reason = (
            f"{group.label}: nvidia-smi reports no compute capability ([N/A]); "
            "pass --gpu-cc X.Y to say which GPU this is"
        )
        return replace(_failed(group, reason), branch_specific=False)
    if group.sm is None:
        return _unknown_gpu(catalog, found, branch, group)
    gpu = catalog.gpus[group.sm]
    lead = f"{group.label} ({gpu.name}, {gpu.family})"
    built = found.on(branch, gpu.name)
    if not built:
        the_branch = catalog.branch(branch)
        detail = f"{branch} (CUDA {the_branch.cuda}) has no {gpu.name} {found.package}"
        bound = _cuda_bound(gpu, the_branch.cuda)
        if bound:
            detail += f" ({gpu.name} {bound})"
        return _failed(group, f"{lead}: {detail}", detail=detail, target_built=False)
    return _outcome(found, lead, group, built, f"{gpu.name} on {branch}")


def _unknown_gpu(catalog: Catalog, found: Candidates, branch: str, group: GpuGroup) -> _Outcome:
    assert group.capability is not None
    cap = version_key(group.capability)
    known = sorted(catalog.gpus.values(), key=lambda g: version_key(g.capability))
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
    cpu = _cpu(found, branch, "").rec.package
    if cpu is not None:
        reason += f"; the CPU-only {cpu} runs here without the GPU"
    rec = Recommendation(gpu=group, package=None, isa=None, reason=reason, fallback=cpu)
    return _Outcome(rec=rec, branch_specific=False)


def _outcome(
    found: Candidates,
    lead: str,
    group: GpuGroup | None,
    built: tuple[Candidate, ...],
    where: str,
) -> _Outcome:
    """The best fit among `built` (the variants of one target on one branch), or why none."""
    by_isa = _one_per_isa(built)
    runnable = {name: c for name, c in by_isa.items() if c.driver_ok}
    choice = choose_isa(found.isas, found.workload, runnable, where)
    if choice.isa is None:
        detail = f"{where} {_misfit([c.isa for c in by_isa.values() if c.isa], found)}"
        if len(runnable) < len(by_isa):
            blocked = choose_isa(found.isas, found.workload, by_isa, where).isa
            if blocked is not None:
                needs = min(c.min_driver or 0 for c in built if c.isa and c.isa.isa is blocked)
                detail = (
                    f"{where} needs NVIDIA driver >= {needs} (this machine has {found.host.driver})"
                )
        return _failed(group, f"{lead}: {detail}", detail=detail, candidates=built)
    isa = choice.isa
    chosen = runnable[isa.name]
    parts = [lead, f"{isa.name}: {' '.join(isa.cpuinfo)} present", *choice.notes]
    rec = Recommendation(
        gpu=group,
        package=chosen.variant,
        isa=isa.name,
        reason="; ".join(parts),
        candidates=built,
    )
    return _Outcome(rec=rec)


def _one_per_isa(built: Sequence[Candidate]) -> dict[str, Candidate]:
    """One variant per ISA: where a branch has two (two CUDA toolkits), the later one the
    host's driver runs."""
    by_isa: dict[str, Candidate] = {}
    for c in built:
        if c.isa is None:
            continue
        earlier = by_isa.get(c.isa.isa.name)
        if earlier is None or c.driver_ok or not earlier.driver_ok:
            by_isa[c.isa.isa.name] = c
    return by_isa


def _misfit(built: Sequence[IsaFit], found: Candidates) -> str:
    """Why none of the ISAs `built` offers suits this host."""
    here = [f for f in built if f.fit is not Fit.OTHER_PLATFORM]
    if not here:
        names = ", ".join(f.isa.name for f in built)
        platforms = ", ".join(sorted({f.isa.platform.value for f in built}))
        return (
            f"is built only for {names} ({platforms}), not for this {found.host.platform} machine"
        )
    # The other workloads' ISAs would only repeat what the general ones say.
    here = [f for f in here if f.isa.workload in (None, found.workload)] or here
    why = "; ".join(f.why_not or "" for f in here)
    return f"is built for {', '.join(f.isa.name for f in here)}; none suits this host ({why})"


def _cuda_bound(gpu: Gpu, cuda: str) -> str:
    if gpu.supports_cuda(cuda):
        return ""
    if gpu.min_cuda is not None and version_key(cuda)[:2] < version_key(gpu.min_cuda):
        return f"needs CUDA >= {gpu.min_cuda}"
    return f"needs CUDA <= {gpu.max_cuda}"


def choose_isa(
    isas: Iterable[IsaFit], workload: str, built: Collection[str], where: str
) -> IsaChoice:
    """The highest-level ISA that fits (the host runs it, and it is general or the workload's)
    among those `built` offers; `isas` are the catalog's, judged, by (level, name).

    The notes explain the next general level up, the workload's own ISA when it lost, and the
    other workloads' ISAs the host could run (a hint for --workload). `where` names the build
    (e.g. "sm61 on main") in "not built for ..." notes.
    """
    here = [f for f in isas if f.fit is not Fit.OTHER_PLATFORM]
    eligible = [f.isa for f in here if f.fit is Fit.FITS and f.isa.name in built]
    # A workload ISA beats a general one of the same level: it was asked for.
    chosen = max(eligible, key=lambda i: (i.level, i.workload is not None), default=None)
    if chosen is None:
        return IsaChoice(isa=None, notes=())
    higher = [f.isa.level for f in here if f.isa.workload is None and f.isa.level > chosen.level]
    next_level = min(higher, default=None)

    def why_not(fit: IsaFit) -> str:
        if fit.missing:  # all its flags, as IsaFit.why_not says why
            return f"{fit.isa.name} not available: needs {' '.join(fit.isa.cpuinfo)}"
        return f"{fit.isa.name} not built for {where}"

    notes = []
    for fit in here:
        isa = fit.isa
        if isa is chosen:
            continue
        if isa.workload is None:
            if isa.level == next_level:
                notes.append(why_not(fit))
        elif isa.workload == workload:
            notes.append(f"{why_not(fit)} (wanted for {workload}, using {chosen.name})")
        elif fit.runs and isa.name in built:
            notes.append(f"{isa.name} not chosen: workload {workload} (it is for {isa.workload})")
    return IsaChoice(isa=chosen, notes=tuple(notes))
