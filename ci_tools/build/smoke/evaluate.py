"""Facts a probe reported + a variant's expectations -> one Check per check. Pure.

The same function judges the CPU torch of the test suite, the CUDA torch of the GPU machine
and every CI build, so a check that passes here passes for the same reason there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from ci_tools.build.results import Check, Status
from ci_tools.build.smoke import evidence
from ci_tools.build.smoke.expect import Expectations, capability_rank, known_capabilities
from ci_tools.catalog.model import Kind, major_minor

Facts = Mapping[str, Any]
Verdict = tuple[Status, str]

_KIND_LABEL = {Kind.GPU: "CUDA", Kind.CPU: "CPU", Kind.DARWIN: "MPS"}


class _Missing(Exception):
    """The probe never reported a fact a check needs (it died, or it is a different probe)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


@dataclass(frozen=True, kw_only=True)
class _Plan:
    name: str
    judge: Callable[[Facts], Verdict]
    needs: str | None = "torch"  # the import this check depends on


# The checks that need a GPU of the variant's SM (a Mac for MPS), and the static proofs.
GPU_CHECKS = ("gpu-mlp", "gpu-matmul", "gpu-compile", "gpu-nms")
MPS_CHECK = "mps"
SASS = "sass"
ISA_CODE = "isa-code"


def check_names(expect: Expectations) -> tuple[str, ...]:
    return tuple(p.name for p in _plan(expect))


def static_proofs(facts: Facts, expect: Expectations, reason: str) -> tuple[Check, ...]:
    """The checks of a build whose code must not run here (`reason`): every check skipped
    with the reason, but the proofs read from its files: the SASS of a GPU build and the
    instructions of its CPU ISA (`isa-code`)."""
    checks = {c.name: c for c in skip_all(expect, reason)}
    if expect.kind is Kind.GPU:
        status, detail = _sass(facts, expect)
        checks[SASS] = Check(name=SASS, status=status, detail=detail)
    if expect.isa is not None:
        status, detail = _isa(facts.get("isa"))
        checks[ISA_CODE] = Check(name=ISA_CODE, status=status, detail=detail)
    return tuple(checks.values())


def _isa(found: Any) -> Verdict:
    if found is None:
        return Status.SKIPPED, "objdump (binutils) is not on PATH (nor $OBJDUMP): no ISA proof"
    if "error" in found:
        return Status.FAILED, str(found["error"])
    if found.get("cannot_tell"):  # too little of torch's own code read: no proof, no failure
        return Status.SKIPPED, str(found["detail"])
    return (Status.STATIC if found["ok"] else Status.FAILED), str(found["detail"])


def skip_all(expect: Expectations, reason: str) -> tuple[Check, ...]:
    """Every check skipped for one reason: the host cannot run this build's code."""
    return tuple(
        Check(name=name, status=Status.SKIPPED, detail=reason) for name in check_names(expect)
    )


def evaluate(facts: Facts, expect: Expectations, crash: str | None = None) -> tuple[Check, ...]:
    """Judge every check; `crash` says why the probe stopped early, if it did."""
    checks = []
    for plan in _plan(expect):
        if plan.needs is not None and not _imported(facts, plan.needs):
            verdict: Verdict = (Status.SKIPPED, f"needs {plan.needs}, which did not import")
        else:
            try:
                verdict = plan.judge(facts)
            except _Missing as missing:
                reason = crash or "the probe exited without reporting it"
                verdict = (Status.FAILED, f"no result for {missing.key}: {reason}")
        checks.append(Check(name=plan.name, status=verdict[0], detail=verdict[1]))
    return tuple(checks)


def version_matches(reported: str, expected: str) -> bool:
    """'2.10.0+cu130' matches '2.10.0' and '2.10'; the local suffix after '+' is ignored."""
    public = reported.split("+", 1)[0].split(".")
    wanted = expected.split(".")
    return public[: len(wanted)] == wanted


def _plan(expect: Expectations) -> list[_Plan]:
    plans = [
        _Plan(name="import-torch", judge=lambda f: _import(f, "torch"), needs=None),
        _Plan(name="torch-version", judge=lambda f: _torch_version(f, expect)),
        _Plan(name="cuda-version", judge=lambda f: _cuda_version(f, expect)),
        _Plan(name="arch-list", judge=lambda f: _arch_list(f, expect)),
    ]
    if expect.kind is Kind.GPU:
        plans.append(_Plan(name=SASS, judge=lambda f: _sass(f, expect), needs=None))
    if expect.kind is Kind.GPU:
        plans.append(_Plan(name="cudnn", judge=lambda f: _cudnn(f, expect)))
    if expect.cpu_capability is not None:
        plans.append(_Plan(name="cpu-capability", judge=lambda f: _cpu_capability(f, expect)))
    plans.append(_Plan(name="cpu-mlp", judge=lambda f: _work(f, "work:cpu_mlp")))
    plans.append(_Plan(name="cpu-compile", judge=lambda f: _work(f, "work:cpu_compile")))
    for kernel in expect.isa_kernels:
        plans.append(
            _Plan(name=kernel.replace("_", "-"), judge=partial(_work, key=f"work:{kernel}"))
        )
    for dep in expect.dependents:
        name = dep.import_name
        plans.append(_Plan(name=f"import-{name}", judge=partial(_import, module=name)))
        plans.append(
            _Plan(
                name=f"{name}-version",
                judge=partial(_dependent_version, module=name, expected=dep.version),
                needs=name,
            )
        )
    if expect.kind is Kind.GPU:
        for name in GPU_CHECKS if expect.nms else GPU_CHECKS[:-1]:
            key = "work:" + name.replace("-", "_")
            plans.append(
                _Plan(
                    name=name,
                    judge=partial(_gpu_work, expect=expect, key=key),
                    needs="torchvision" if name == "gpu-nms" else "torch",
                )
            )
    if expect.kind is Kind.DARWIN:
        plans.append(_Plan(name=MPS_CHECK, judge=_mps))
    return plans


def _get(facts: Facts, key: str) -> Any:
    if key not in facts:
        raise _Missing(key)
    return facts[key]


def _imported(facts: Facts, module: str) -> bool:
    result = facts.get(f"import:{module}")
    return isinstance(result, Mapping) and bool(result.get("ok"))


def _import(facts: Facts, module: str) -> Verdict:
    result = _get(facts, f"import:{module}")
    if result.get("ok"):
        return Status.PASSED, f"imported from {result.get('detail', '?')}"
    return Status.FAILED, str(result.get("detail", "import failed"))


def _version(reported: str, expected: str | None, what: str) -> Verdict:
    if expected is None:
        return Status.SKIPPED, (
            f"no version to compare {what} {reported} with: the catalog's versions name none "
            "(without a catalog: versions under branches.<branch> in ci-tools.yaml)"
        )
    if version_matches(reported, expected):
        return Status.PASSED, f"{what} is {reported}, expected {expected}"
    return Status.FAILED, f"{what} is {reported}, expected {expected}"


def _torch_version(facts: Facts, expect: Expectations) -> Verdict:
    return _version(str(_get(facts, "torch.version")), expect.torch_version, "torch.__version__")


def _dependent_version(facts: Facts, module: str, expected: str | None) -> Verdict:
    return _version(str(_get(facts, f"{module}.version")), expected, f"{module}.__version__")


def _cuda_version(facts: Facts, expect: Expectations) -> Verdict:
    reported = _get(facts, "torch.version.cuda")
    kind = _KIND_LABEL[expect.kind]
    if expect.cuda is None:
        if reported is None:
            return Status.PASSED, f"torch.version.cuda is None, as a {kind} build must"
        return Status.FAILED, f"torch.version.cuda is {reported}, expected None for a {kind} build"
    if reported is None:
        return (
            Status.FAILED,
            f"torch.version.cuda is None (a CPU-only torch), expected {expect.cuda}",
        )
    if major_minor(str(reported)) == expect.cuda:
        return Status.PASSED, f"torch.version.cuda is {reported}, expected {expect.cuda}"
    return Status.FAILED, f"torch.version.cuda is {reported}, expected {expect.cuda}"


def _arch_list(facts: Facts, expect: Expectations) -> Verdict:
    archs = [str(a) for a in _get(facts, "torch.arch_list")]
    shown = "[" + ", ".join(archs) + "]"
    wanted = expect.arch
    kind = _KIND_LABEL[expect.kind]
    if wanted is None:
        if not archs:
            return Status.PASSED, f"compiled for no CUDA architecture, as a {kind} build must"
        return Status.FAILED, f"compiled for {shown}; a {kind} build must have none"
    sass = [a for a in archs if a.startswith("sm_")]
    # PTX of the same architecture (nixpkgs' forward compatibility) adds no other GPU's code.
    same_ptx = "compute_" + wanted.removeprefix("sm_")
    foreign = [a for a in archs if not a.startswith("sm_") and a != same_ptx]
    if sass == [wanted] and not foreign:
        return Status.PASSED, f"compiled for {shown}, expected exactly [{wanted}]"
    if not sass:
        what = f"only {shown}" if archs else "no CUDA architecture"
        return Status.FAILED, f"compiled for {what}: no {wanted} code; expected exactly [{wanted}]"
    if len(sass) + len(foreign) > 1:
        return Status.FAILED, f"fat binary: compiled for {shown}, expected exactly [{wanted}]"
    return Status.FAILED, f"compiled for {shown}, expected exactly [{wanted}]"


def _sass(facts: Facts, expect: Expectations) -> Verdict:
    """The kernels the library really holds (cuobjdump), not the list the build reports."""
    found = _get(facts, "sass")
    wanted = expect.arch or "?"
    if found is None:
        return Status.SKIPPED, "cuobjdump is not on PATH (nor in $CUDA_HOME/bin): no SASS proof"
    if "error" in found:
        return Status.FAILED, str(found["error"])
    libraries: Mapping[str, Any] = found["libraries"]
    if not libraries:
        return Status.FAILED, f"no libtorch_cuda*.so in {found.get('lib_dir', 'torch/lib')}"
    listing = {name: (archs["sass"], archs["ptx"]) for name, archs in libraries.items()}
    shown = evidence.sass_listing(listing)
    if evidence.not_exactly(listing, wanted):
        return (
            Status.FAILED,
            f"{shown}; expected exactly SASS [{wanted}] (PTX of {wanted} allowed)",
        )
    return Status.STATIC, f"{shown}; exactly {wanted}, as cuobjdump lists"


def _cudnn(facts: Facts, expect: Expectations) -> Verdict:
    available = bool(_get(facts, "torch.cudnn"))
    sm = f"{expect.sm} ({expect.gpu_capability})"
    if expect.cudnn:
        if available:
            return Status.PASSED, f"cuDNN available, as {sm} builds must have it (SM >= 7.5)"
        return Status.FAILED, f"cuDNN not available; {sm} builds must have it (SM >= 7.5)"
    if available:
        return (
            Status.FAILED,
            f"cuDNN available; {sm} builds must not have it (cuDNN 9.12+ needs SM >= 7.5)",
        )
    return Status.PASSED, f"cuDNN not available, as {sm} builds must not have it (SM < 7.5)"


def _cpu_capability(facts: Facts, expect: Expectations) -> Verdict:
    reported = str(_get(facts, "cpu.capability"))
    wanted = expect.cpu_capability or "DEFAULT"
    known = known_capabilities(expect.platform)
    have = capability_rank(expect.platform, reported)
    need = capability_rank(expect.platform, wanted)
    if need is None:
        return Status.FAILED, f"the catalog's {expect.isa} asks for {wanted}, not one of {known}"
    if have is None:
        return Status.FAILED, f"torch reports CPU capability {reported!r}, not one of {known}"
    if have < need:
        return (
            Status.FAILED,
            f"torch reports {reported}, below {wanted}: the {expect.isa} build lost its vectorisation",
        )
    return Status.PASSED, f"torch reports {reported}, at least {wanted} for {expect.isa}"


def _work(facts: Facts, key: str) -> Verdict:
    result = _get(facts, key)
    return (Status.PASSED if result.get("ok") else Status.FAILED), str(result.get("detail", ""))


def _gpu_work(facts: Facts, expect: Expectations, key: str) -> Verdict:
    devices = _get(facts, "cuda.devices")
    if "cuda.device" not in facts:
        wanted = f"{expect.sm} (capability {expect.gpu_capability})"
        if not devices:
            error = facts.get("cuda.error")
            why = f": {error}" if error else " (torch.cuda.is_available() is False)"
            return Status.SKIPPED, f"no CUDA GPU visible{why}; needs a {wanted} GPU"
        seen = ", ".join(f"{d.get('name')} ({d.get('capability')})" for d in devices)
        return Status.SKIPPED, f"no {wanted} GPU here; visible: {seen}"
    return _work(facts, key)


def _mps(facts: Facts) -> Verdict:
    if not _get(facts, "mps.available"):
        return Status.FAILED, "torch.backends.mps.is_available() is False on this Mac"
    return _work(facts, "work:mps_matmul")
