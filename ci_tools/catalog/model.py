"""The catalog's records: frozen, typed, free of I/O.

`catalog.load_catalog` builds them from YAML; everything else reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ci_tools.catalog.published import Published


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def major_minor(version: str) -> str:
    """'12.9.1' -> '12.9'."""
    return ".".join(version.split(".")[:2])


class Kind(StrEnum):
    GPU = "gpu"
    CPU = "cpu"
    DARWIN = "darwin"


class Platform(StrEnum):
    X86_64_LINUX = "x86_64-linux"
    AARCH64_LINUX = "aarch64-linux"
    AARCH64_DARWIN = "aarch64-darwin"


@dataclass(frozen=True, kw_only=True)
class Package:
    """A package the catalog builds (`packages`): its Nix attribute, import name and base."""

    name: str
    attribute: str
    import_name: str
    requires: str | None = None
    line: int = 0


@dataclass(frozen=True, kw_only=True)
class Isa:
    """A CPU instruction set a variant is built for (`isas`), and what proves a host has it."""

    name: str
    platform: Platform
    description: str
    level: int
    compiler_flags: tuple[str, ...]
    cpuinfo: tuple[str, ...]
    torch_capability: str
    disables: tuple[str, ...] = ()
    workload: str | None = None
    hardware: str = ""
    line: int = 0


@dataclass(frozen=True, kw_only=True)
class Gpu:
    """A GPU architecture (`gpus`): its compute capability and the CUDA that supports it."""

    name: str  # "sm90"
    capability: str  # "9.0"
    family: str
    hardware: tuple[str, ...]
    min_cuda: str | None = None
    max_cuda: str | None = None
    isas: tuple[str, ...] | None = None
    cudnn: bool = True
    line: int = 0

    @property
    def number(self) -> str:
        """'sm90' -> '90'."""
        return self.name.removeprefix("sm")

    def supports_cuda(self, cuda: str) -> bool:
        have = version_key(major_minor(cuda))
        if self.min_cuda is not None and have < version_key(self.min_cuda):
            return False
        return not (self.max_cuda is not None and have > version_key(self.max_cuda))


@dataclass(frozen=True, kw_only=True)
class Source:
    """A package built from a newer upstream release than the pin ships (`sources`)."""

    package: str  # catalog package name: "pytorch"
    version: str
    hash: str  # the fixed-output hash of the upstream source
    line: int = 0


@dataclass(frozen=True, kw_only=True)
class Toolkit:
    """One CUDA toolkit of a branch: its CUDA, nixpkgs set and pin, and what it needs."""

    name: str  # the catalog key: "cuda12_8"
    cuda: str  # as the catalog states it, e.g. "12.9.1"
    cuda_packages: str  # "cudaPackages_12_9", or an alias the pin has ("cudaPackages_13")
    nixpkgs_rev: str
    nixpkgs_sha256: str | None
    min_driver: int | None  # None: unknown (a repository without a catalog that says none)
    allow_broken: bool = False  # nixpkgs marks torch broken for this CUDA (major not 11/12)
    overlays: tuple[str, ...] = ()  # names of nix/overlays/NAME.nix, in order
    overlay_lines: tuple[int, ...] = ()
    line: int = 0

    @property
    def cuda_short(self) -> str:
        return major_minor(self.cuda)

    @property
    def cuda_tag(self) -> str:
        """'12.9.1' -> '12_9', as in package names."""
        return self.cuda_short.replace(".", "_")


@dataclass(frozen=True, kw_only=True)
class VariantSet:
    """What one package builds on one branch; every entry keeps its catalog line."""

    cpu: tuple[tuple[str, int], ...] = ()
    gpu: tuple[tuple[str, str, int], ...] = ()  # (sm, isa, line), for gpu_toolkits' toolkit
    # The toolkit of each gpu entry (same order); None: the branch's one toolkit.
    gpu_toolkits: tuple[str | None, ...] = ()
    darwin_mps: bool = False
    darwin_line: int = 0
    line: int = 0


@dataclass(frozen=True, kw_only=True)
class Branch:
    """One branch of the build repository (`branches`): its pins, toolkits and variants."""

    name: str
    versions: Mapping[str, str]  # package name -> upstream version
    cuda: str  # as the branch states it, e.g. "12.9.1"
    python: tuple[str, ...]  # "3.13"
    min_driver: int | None  # None: unknown (a repository without a catalog that says none)
    nixpkgs_rev: str
    nixpkgs_sha256: str | None
    cuda_packages: str
    overlays: tuple[str, ...] = ()  # applied to every pin of the branch
    overlay_lines: tuple[int, ...] = ()
    variants: Mapping[str, VariantSet] = field(default_factory=dict)
    # The CUDA toolkits; `cuda`, `cuda_packages`, `min_driver`, `nixpkgs_rev` above are the
    # first one's (one-toolkit branches state them directly). `nixpkgs_rev` and
    # `nixpkgs_sha256` are the branch pin, which CPU and Apple variants use.
    toolkits: tuple[Toolkit, ...] = ()
    sources: tuple[Source, ...] = ()
    # A branch of a repository without a catalog: its variants are its recipes, by their
    # published names (`variants` is empty).
    published: tuple[Published, ...] = ()
    line: int = 0

    def toolkit(self, name: str | None) -> Toolkit:
        """The named toolkit, or the branch's first for None."""
        if name is None:
            return self.toolkits[0]
        return next(t for t in self.toolkits if t.name == name)

    @property
    def cuda_short(self) -> str:
        return major_minor(self.cuda)

    @property
    def cuda_tag(self) -> str:
        """'12.9.1' -> '12_9', as in package names."""
        return self.cuda_short.replace(".", "_")


@dataclass(frozen=True, kw_only=True)
class Catalog:
    """The whole catalog, as `load_catalog` validated it."""

    path: Path
    display_name: str
    packages: Mapping[str, Package]
    isas: Mapping[str, Isa]
    gpus: Mapping[str, Gpu]
    branches: Mapping[str, Branch]
    org: str | None = None  # the Flox organisation of `flox install ORG/NAME`

    def branch(self, name: str) -> Branch:
        """The named branch; an unknown name is bad input that lists the known ones."""
        from ci_tools.base.errors import InputError

        try:
            return self.branches[name]
        except KeyError:
            known = ", ".join(self.branches)
            raise InputError(f'unknown branch "{name}": {self.display_name} has {known}') from None

    def gpu_by_capability(self, capability: str) -> Gpu | None:
        for gpu in self.gpus.values():
            if gpu.capability == capability:
                return gpu
        return None
