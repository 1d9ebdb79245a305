"""The shape of `catalog.yaml` and `runners.yaml`, each key declared once (see `shape.py`);
`settings.py` declares `ci-tools.yaml` with the same kinds.

The loaders check files against these, `python3 -m ci_tools.catalog.schema` writes the JSON
Schemas from them and `ci-tools generate` the key reference (docs/reference.md).
"""

from __future__ import annotations

from typing import Any

from ci_tools.catalog import grammar as g

# runners.yaml is declared in runner_tables.py; what both files share is declared there.
from ci_tools.catalog.runner_tables import DEFAULT_MINUTES as DEFAULT_MINUTES
from ci_tools.catalog.runner_tables import PLATFORMS as PLATFORMS
from ci_tools.catalog.runner_tables import RUNNERS as RUNNERS
from ci_tools.catalog.scalars import Bool, Enum, Int, Text, Version
from ci_tools.catalog.shape import Either, Field, ListOf, MapOf, Table


def _missing_hash_hint(table: dict[Any, Any], what: str) -> str:
    """`upstream.missing_hash_hint`, imported only when a hash is missing: every load of the
    catalog imports this module."""
    from ci_tools.catalog.upstream import missing_hash_hint

    return missing_hash_hint(table, what)


LINUX = PLATFORMS[:2]
NAMES = ListOf(Text(g.IDENT))
OVERLAYS = ListOf(
    Text(
        g.OVERLAY,
        hint="is not an overlay name (nix/overlays/NAME.nix, NAME of lower-case letters, "
        "digits and dashes)",
    ),
    unique=True,
)

# --- catalog.yaml ---------------------------------------------------------------------------

PACKAGE = Table(
    name="package",
    label="package",
    fields=(
        Field("attribute", Text(g.NIX_IDENT), "Its attribute in nixpkgs' pythonXXXPackages.", True),
        Field(
            "import_name",
            Text(g.NIX_IDENT),
            "What `import` loads in the smoke test.",
            default_doc="the attribute",
        ),
        Field(
            "requires",
            Text(g.PACKAGE_NAME),
            "The package it builds against: the variant of that package with the same name "
            "suffix (torchvision-X uses pytorch-X). Every package but torch has one; torch "
            "has none.",
        ),
    ),
)

ISA = Table(
    name="isa",
    label="ISA",
    fields=(
        Field("platform", Enum(LINUX), "The Linux platform whose CPUs have it.", True),
        Field("description", Text(), "What it is, for tables (AVX-512 with BF16).", True),
        Field(
            "level", Int(0, 100), "Orders the ISAs of one platform from the most portable up.", True
        ),
        Field(
            "compiler_flags",
            ListOf(Text(g.COMPILER_FLAG), non_empty=True),
            "Flags added to CFLAGS and CXXFLAGS.",
            True,
        ),
        Field(
            "cpuinfo",
            ListOf(Text(g.CPUINFO_FLAG), non_empty=True),
            "The /proc/cpuinfo flags (x86 `flags`, aarch64 `Features`) a host needs to run it.",
            True,
        ),
        Field(
            "torch_capability",
            Text(g.TORCH_CAPABILITY),
            "The least torch.backends.cpu.get_cpu_capability() may report for a build of it.",
            True,
        ),
        Field(
            "disables",
            ListOf(Text(g.FEATURE)),
            "PyTorch features it cannot carry, turned off with `USE_<FEATURE>=0`.",
            default=(),
        ),
        Field("workload", Text(g.WORKLOAD), "The workload it is for, which `detect` names."),
        Field(
            "hardware",
            Text(),
            "CPUs that have it, for the reference tables (docs/reference.md).",
            default="",
        ),
    ),
)

GPU = Table(
    name="gpu",
    label="GPU",
    fields=(
        Field(
            "capability",
            Version(g.CAPABILITY, hint='must look like "9.0"'),
            "Its compute capability; sm90 is 9.0.",
            True,
        ),
        Field("family", Text(), "The architecture's name (Hopper).", True),
        Field(
            "hardware",
            ListOf(Text()),
            "GPUs of this SM, for the reference tables (docs/reference.md).",
            True,
        ),
        Field("min_cuda", Version(), "The lowest CUDA (major.minor) that compiles it."),
        Field("max_cuda", Version(), "The highest CUDA (major.minor) that compiles it."),
        Field("isas", NAMES, "The only CPU ISAs it pairs with.", default_doc="every ISA"),
        Field("cudnn", Bool(), "Build with cuDNN (9.12+ refuses capability < 7.5).", default=True),
    ),
)

NIXPKGS = Table(
    name="nixpkgs",
    fields=(
        Field(
            "rev",
            Text(g.NIXPKGS_REV, hint="must be a full 40-hex-digit commit"),
            "The nixpkgs commit.",
            True,
        ),
        Field(
            "sha256",
            Text(
                g.NIX_SHA256,
                hint="must be a Nix hash (sha256-...= SRI, 52 base32 or 64 hex digits)",
            ),
            "`nix-prefetch-url --unpack` of its tarball: the fetch is verified and "
            "pure-evaluation safe.",
        ),
    ),
)

CUDA = Field("cuda", Version(), "The CUDA version (12.9.1); major.minor names packages.", True)
CUDA_PACKAGES = Field(
    "cuda_packages",
    Text(
        g.CUDA_PACKAGES,
        hint="must be a versioned nixpkgs attribute like cudaPackages_12_9 or cudaPackages_13 "
        "(the bare cudaPackages is what nix/nixpkgs.nix redefines: it would recurse for ever)",
    ),
    "The nixpkgs CUDA set for that CUDA, or an alias the pin has (cudaPackages_13).",
    True,
)
MIN_DRIVER = Field(
    "min_driver",
    Int(0, 9999),
    "The lowest NVIDIA driver branch that runs its builds (580 for CUDA 13.0), from NVIDIA's "
    "table of CUDA toolkits and driver versions; `detect` compares the driver's major version.",
    True,
)
ALLOW_BROKEN = Field(
    "allow_broken",
    Bool(),
    "Build although nixpkgs marks torch broken for this CUDA (a major other than 11 or 12).",
    default=False,
)

TOOLKIT = Table(
    name="toolkit",
    label="toolkit",
    fields=(
        CUDA,
        CUDA_PACKAGES,
        MIN_DRIVER,
        Field("nixpkgs", NIXPKGS, "Its own nixpkgs pin.", default_doc="the branch's"),
        ALLOW_BROKEN,
        Field("overlays", OVERLAYS, "Overlays for its pin, in order.", default=()),
    ),
)

SOURCE = Table(
    name="source",
    fields=(
        Field("version", Version(), "The upstream release; the branch's version of it.", True),
        Field(
            "hash",
            Text(
                g.SRI_SHA256,
                hint="must be the source's SRI hash (sha256-...=, 44 characters after the "
                "dash), as nix-prefetch-github prints it",
            ),
            "The SRI hash of its GitHub source.",
            True,
            when_missing=_missing_hash_hint,
        ),
    ),
)


def _variant_set(gpu: MapOf, form: str, gpu_doc: str) -> Table:
    return Table(
        name=f"variant_set_{form}",
        fields=(
            Field("cpu", NAMES, "The ISAs of its CPU-only variants.", default=()),
            Field("gpu", gpu, gpu_doc),
            Field("darwin_mps", Bool(), "Whether the Apple MPS build exists.", default=False),
        ),
    )


SMS = MapOf(Text(g.SM), NAMES, "SMs to lists of ISAs", "sm")
VARIANT_SET = _variant_set(SMS, "one", "Its GPU variants: the ISAs of each SM.")
VARIANT_SET_BY_TOOLKIT = _variant_set(
    MapOf(
        Text(
            g.TOOLKIT,
            hint="is not a toolkit name like cuda12_8 (this branch has toolkits: gpu maps "
            "toolkit names to SMs)",
        ),
        SMS,
        "toolkit names to SMs to lists of ISAs",
        "toolkit",
    ),
    "by_toolkit",
    "Its GPU variants: the ISAs of each SM of each toolkit.",
)


def _branch(form: str, marker: str, own: tuple[Field, ...], variant_set: Table) -> Table:
    variants = MapOf(
        Text(g.PACKAGE_NAME), variant_set, "package names to variant sets", "package", True
    )
    return Table(
        name=f"branch_{form}",
        label="branch",
        marker=marker,
        doc=f"with `{marker}`" if marker else "without `toolkits`",
        fields=(
            Field(
                "versions",
                MapOf(Text(g.PACKAGE_NAME), Version(), "package names to versions", "package"),
                "The upstream version of each package it builds.",
                True,
            ),
            Field(
                "python",
                ListOf(
                    Version(
                        g.PYTHON,
                        hint=f"is not a Python the nixpkgs pins have ({', '.join(g.PIN_PYTHONS)})",
                    ),
                    non_empty=True,
                    unique=True,
                ),
                "The Python versions it builds for.",
                True,
            ),
            Field("nixpkgs", NIXPKGS, "Its nixpkgs pin, which CPU and Apple variants use.", True),
            *own,
            Field("overlays", OVERLAYS, "Overlays applied to every pin of the branch.", default=()),
            Field(
                "sources",
                MapOf(Text(g.PACKAGE_NAME), SOURCE, "package names to {version, hash}", "package"),
                "Packages built from a newer upstream release than the pin ships.",
            ),
            Field("variants", variants, "What each package builds.", True),
        ),
    )


BRANCH_BY_TOOLKIT = _branch(
    "by_toolkit",
    "toolkits",
    (
        Field(
            "toolkits",
            MapOf(
                Text(g.TOOLKIT, hint="is not a toolkit name like cuda12_8"),
                TOOLKIT,
                "toolkit names (cuda12_8) to toolkits",
                "toolkit",
                True,
            ),
            "Its CUDA toolkits, each keyed `cuda<X>_<Y>`.",
            True,
        ),
    ),
    VARIANT_SET_BY_TOOLKIT,
)
BRANCH = Either(
    BRANCH_BY_TOOLKIT,
    _branch("one", "", (CUDA, CUDA_PACKAGES, MIN_DRIVER, ALLOW_BROKEN), VARIANT_SET),
)


def _named(key: g.Rule, value: Table | Either, what: str, placeholder: str) -> MapOf:
    return MapOf(Text(key), value, what, placeholder, non_empty=True, alone=True)


CATALOG = Table(
    name="catalog",
    label="the catalog",
    doc="Every variant this repository builds: packages, CPU ISAs, GPUs, branches.",
    fields=(
        Field(
            "org",
            Text(g.ORG),
            "The Flox organisation its variants are published to: `detect` and the selector "
            "page print `flox install ORG/NAME`.",
            default_doc="none: install lines say `<org>`",
        ),
        Field(
            "packages",
            _named(g.PACKAGE_NAME, PACKAGE, "package names to packages", "package"),
            "Packages a variant can be.",
            True,
        ),
        Field("isas", _named(g.IDENT, ISA, "ISA names to ISAs", "isa"), "CPU ISAs.", True),
        Field("gpus", _named(g.SM, GPU, "SMs to GPUs", "sm"), "NVIDIA GPU architectures.", True),
        Field(
            "branches",
            _named(g.BRANCH, BRANCH, "branch names to branches", "branch"),
            "One git branch per PyTorch version.",
            True,
        ),
    ),
)
