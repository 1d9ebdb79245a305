"""What a variant's build must report, taken from the catalog. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ci_tools.catalog.model import Catalog, Kind, Platform
from ci_tools.catalog.variants import Variant, expand

if TYPE_CHECKING:
    from ci_tools.build.results import ResultRecord

# torch.backends.cpu.get_cpu_capability() values per platform, weakest first; names on one
# level are equivalent ("NO AVX" is what x86 torch reports when it dispatches to DEFAULT).
# ATen picks the best kernel the host supports at run time, so a build may report more than
# its ISA's level, never less.
CPU_CAPABILITY_ORDER: Mapping[Platform, tuple[frozenset[str], ...]] = {
    Platform.X86_64_LINUX: (
        frozenset({"DEFAULT", "NO AVX"}),
        frozenset({"AVX2"}),
        frozenset({"AVX512"}),
    ),
    Platform.AARCH64_LINUX: (frozenset({"DEFAULT"}), frozenset({"SVE256"})),
    Platform.AARCH64_DARWIN: (frozenset({"DEFAULT"}),),
}

# The package whose dependents ship an NMS kernel worth running on the GPU.
_NMS_PACKAGE = "torchvision"

# The kernels that exercise an ISA's own instructions, keyed by the /proc/cpuinfo flag that
# names them (catalog `isas.*.cpuinfo`): an avx512bf16 build runs a bf16 matmul, an avx512vnni
# build an int8 quantized Linear (VNNI's dot products), each against fp32.
ISA_KERNELS: Mapping[str, str] = {"avx512_bf16": "bf16_matmul", "avx512_vnni": "int8_linear"}


def capability_rank(platform: Platform, capability: str) -> int | None:
    for rank, names in enumerate(CPU_CAPABILITY_ORDER.get(platform, ())):
        if capability in names:
            return rank
    return None


def known_capabilities(platform: Platform) -> str:
    return ", ".join(" = ".join(sorted(level)) for level in CPU_CAPABILITY_ORDER.get(platform, ()))


@dataclass(frozen=True, kw_only=True)
class Dependent:
    """A package imported on top of torch (torchvision-X is tested with its own import)."""

    import_name: str
    version: str | None


@dataclass(frozen=True, kw_only=True)
class Expectations:
    variant: str
    branch: str
    platform: Platform
    kind: Kind
    torch_version: str | None
    cuda: str | None  # major.minor; None for CPU and MPS builds
    sm: str | None  # "sm90"
    gpu_capability: str | None  # "9.0"
    cudnn: bool
    isa: str | None
    cpu_capability: str | None  # the least torch may report
    cpuinfo: tuple[str, ...]  # host flags the build needs
    dependents: tuple[Dependent, ...] = ()
    nms: bool = False

    @property
    def isa_kernels(self) -> tuple[str, ...]:
        return tuple(ISA_KERNELS[flag] for flag in self.cpuinfo if flag in ISA_KERNELS)

    @property
    def arch(self) -> str | None:
        """The one entry torch's compiled arch list must hold: 'sm_90'."""
        return None if self.sm is None else "sm_" + self.sm.removeprefix("sm")

    def probe_config(self) -> dict[str, Any]:
        return {
            "imports": [d.import_name for d in self.dependents],
            "gpu_capability": self.gpu_capability,
            "nms": self.nms,
            "mps": self.kind is Kind.DARWIN,
            "compile": True,
            "isa_kernels": list(self.isa_kernels),
        }


def expectations_for(variant: Variant) -> Expectations:
    base = variant.package.requires or variant.package.name
    dependents: tuple[Dependent, ...] = ()
    if variant.package.requires is not None:
        dependents = (Dependent(import_name=variant.package.import_name, version=variant.version),)
    return Expectations(
        variant=variant.name,
        branch=variant.branch.name,
        platform=variant.platform,
        kind=variant.kind,
        torch_version=variant.branch.versions.get(base),
        cuda=variant.cuda,
        sm=variant.gpu.name if variant.gpu is not None else None,
        gpu_capability=variant.gpu.capability if variant.gpu is not None else None,
        cudnn=variant.cudnn,
        isa=variant.isa.name if variant.isa is not None else None,
        cpu_capability=variant.isa.torch_capability if variant.isa is not None else None,
        cpuinfo=variant.isa.cpuinfo if variant.isa is not None else (),
        dependents=dependents,
        nms=variant.package.name == _NMS_PACKAGE,
    )


# The catalog's expectations of the variant a record names (by its branch and name), for the
# publish policy's judges; None where the catalog has no such variant.
ExpectOf = Callable[["ResultRecord"], Expectations | None]


def from_catalog(catalog: Catalog) -> ExpectOf:
    """Each branch expanded once, when a record of it is first asked about."""
    known: dict[str, dict[str, Expectations]] = {}

    def of(record: ResultRecord) -> Expectations | None:
        if record.branch not in catalog.branches:
            return None
        if record.branch not in known:
            variants = expand(catalog, record.branch)
            known[record.branch] = {v.name: expectations_for(v) for v in variants}
        return known[record.branch].get(record.variant)

    return of


def of_variants(variants: Iterable[Variant]) -> ExpectOf:
    known = {(v.branch.name, v.name): expectations_for(v) for v in variants}
    return lambda record: known.get((record.branch, record.variant))
