"""Catalog -> Variant records: names, platforms, expectations. Pure functions.

Their grouping into stacks (`stacks`) is apart: only the build groups them so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ci_tools.catalog import names
from ci_tools.catalog.model import (
    Branch,
    Catalog,
    Gpu,
    Isa,
    Kind,
    Package,
    Platform,
    Toolkit,
    VariantSet,
    version_key,
)
from ci_tools.catalog.yamlsrc import Problems, did_you_mean

if TYPE_CHECKING:
    from ci_tools.catalog.published import Published


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One build of one package: its name and every fact of the catalog it is built from."""

    name: str
    package: Package
    branch: Branch
    python: str  # "3.13"
    kind: Kind
    gpu: Gpu | None
    isa: Isa | None
    line: int  # where the catalog declares it
    toolkit: Toolkit | None = None  # the CUDA toolkit of a GPU variant

    @property
    def pin(self) -> tuple[str, str | None]:
        """(rev, sha256) of the nixpkgs this variant evaluates against."""
        if self.toolkit is not None:
            return self.toolkit.nixpkgs_rev, self.toolkit.nixpkgs_sha256
        return self.branch.nixpkgs_rev, self.branch.nixpkgs_sha256

    @property
    def platform(self) -> Platform:
        if self.kind is Kind.DARWIN:
            return Platform.AARCH64_DARWIN
        assert self.isa is not None
        return self.isa.platform

    @property
    def suffix(self) -> str:
        """The name without its package: shared by every variant of one stack."""
        return self.name.removeprefix(self.package.name + "-")

    @property
    def requires(self) -> str | None:
        """The name of the variant this one builds against (torchvision-X -> pytorch-X)."""
        if self.package.requires is None:
            return None
        return f"{self.package.requires}-{self.suffix}"

    @property
    def python_tag(self) -> str:
        return names.python_tag(self.python)

    @property
    def python_packages(self) -> str:
        """The nixpkgs package set: 'python313Packages'."""
        return self.python_tag + "Packages"

    @property
    def version(self) -> str | None:
        """The upstream version this variant's package must report."""
        return self.branch.versions.get(self.package.name)

    @property
    def cuda(self) -> str | None:
        """major.minor CUDA that torch.version.cuda must report; None for CPU and MPS."""
        if self.kind is not Kind.GPU:
            return None
        return self.toolkit.cuda_short if self.toolkit is not None else self.branch.cuda_short

    @property
    def cudnn(self) -> bool:
        return self.gpu is not None and self.gpu.cudnn

    @property
    def disabled_features(self) -> tuple[str, ...]:
        return self.isa.disables if self.isa is not None else ()


def expand(catalog: Catalog, branch_name: str) -> tuple[Variant, ...]:
    """Every variant of one branch, in catalog order (packages, then Pythons, CPU, GPU, MPS)."""
    branch = catalog.branch(branch_name)
    return tuple(_expand_branch(catalog, branch, Problems()))


def expand_all(catalog: Catalog) -> dict[str, tuple[Variant, ...]]:
    return {name: expand(catalog, name) for name in catalog.branches}


def find(catalog: Catalog, branch_name: str, variant_name: str) -> Variant:
    """The named variant; an unknown name is bad input that offers the closest names."""
    from ci_tools.base.errors import InputError
    from ci_tools.catalog.yamlsrc import closest

    variants = {v.name: v for v in expand(catalog, branch_name)}
    try:
        return variants[variant_name]
    except KeyError:
        near = closest(variant_name, set(variants))
        hint = f"; closest: {', '.join(near)}" if near else ""
        raise InputError(
            f'unknown variant "{variant_name}" on branch {branch_name}{hint}'
        ) from None


def check_variants(catalog: Catalog, problems: Problems) -> None:
    """The rules that relate tables: reported with the line of the offending entry."""
    for branch in catalog.branches.values():
        _expand_branch(catalog, branch, problems)


def _expand_branch(catalog: Catalog, branch: Branch, problems: Problems) -> list[Variant]:
    if branch.published:
        return [_published_variant(catalog, branch, p) for p in branch.published]
    file = catalog.display_name
    found: list[Variant] = []
    for package_name, variant_set in branch.variants.items():
        package = catalog.packages.get(package_name)
        if package is None:
            problems.add(
                file,
                variant_set.line,
                f'{branch.name}.variants: unknown package "{package_name}"'
                f"{did_you_mean(package_name, set(catalog.packages))}",
            )
            continue
        if package_name not in branch.versions:
            problems.add(
                file,
                branch.line,
                f"branch {branch.name} builds {package_name} but its versions do not name it",
            )
        for python in branch.python:
            found += _cpu_variants(catalog, branch, package, python, variant_set, problems)
            found += _gpu_variants(catalog, branch, package, python, variant_set, problems)
            if variant_set.darwin_mps:
                found.append(_darwin_variant(branch, package, python, variant_set))
    out = _each_name_once(found, branch, file, problems)
    _check_requires(out, branch, file, problems)
    return out


def _cpu_variants(
    catalog: Catalog,
    branch: Branch,
    package: Package,
    python: str,
    variant_set: VariantSet,
    problems: Problems,
) -> Iterator[Variant]:
    for isa_name, line in variant_set.cpu:
        isa = _isa(catalog, isa_name, line, branch, problems)
        if isa is not None:
            yield Variant(
                name=names.cpu_name(package.name, python, isa_name),
                package=package,
                branch=branch,
                python=python,
                kind=Kind.CPU,
                gpu=None,
                isa=isa,
                line=line,
            )


def _gpu_variants(
    catalog: Catalog,
    branch: Branch,
    package: Package,
    python: str,
    variant_set: VariantSet,
    problems: Problems,
) -> Iterator[Variant]:
    file = catalog.display_name
    toolkit_names = variant_set.gpu_toolkits or (None,) * len(variant_set.gpu)
    for (sm, isa_name, line), toolkit_name in zip(variant_set.gpu, toolkit_names, strict=True):
        toolkit = _toolkit(branch, toolkit_name, line, file, problems)
        if toolkit is None:
            continue
        gpu = _gpu(catalog, sm, line, branch, toolkit, problems)
        isa = _isa(catalog, isa_name, line, branch, problems)
        if gpu is None or isa is None or not _pairs(gpu, isa, line, branch, file, problems):
            continue
        yield Variant(
            name=names.gpu_name(package.name, python, toolkit.cuda_tag, sm, isa_name),
            package=package,
            branch=branch,
            python=python,
            kind=Kind.GPU,
            gpu=gpu,
            isa=isa,
            line=line,
            toolkit=toolkit,
        )


def _darwin_variant(
    branch: Branch, package: Package, python: str, variant_set: VariantSet
) -> Variant:
    return Variant(
        name=names.darwin_name(package.name, python),
        package=package,
        branch=branch,
        python=python,
        kind=Kind.DARWIN,
        gpu=None,
        isa=None,
        line=variant_set.darwin_line,
    )


def _published_variant(catalog: Catalog, branch: Branch, published: Published) -> Variant:
    """A recipe's variant; its facts were checked when its name was (plan.discovery)."""
    return Variant(
        name=published.name,
        package=catalog.packages[published.package],
        branch=branch,
        python=published.python,
        kind=published.kind,
        gpu=catalog.gpus[published.sm] if published.sm is not None else None,
        isa=catalog.isas[published.isa] if published.isa is not None else None,
        line=0,
        toolkit=branch.toolkit(published.toolkit) if published.toolkit is not None else None,
    )


def _each_name_once(
    variants: list[Variant], branch: Branch, file: str, problems: Problems
) -> list[Variant]:
    seen: dict[str, int] = {}
    out = []
    for variant in variants:
        if variant.name in seen:
            problems.add(
                file,
                variant.line,
                f"duplicate variant {variant.name} on branch {branch.name} "
                f"(first declared on line {seen[variant.name]})",
            )
            continue
        seen[variant.name] = variant.line
        out.append(variant)
    return out


def _check_requires(variants: list[Variant], branch: Branch, file: str, problems: Problems) -> None:
    """Every dependent variant has its required package's variant of the same suffix."""
    by_package: dict[str, set[str]] = {}
    for variant in variants:
        by_package.setdefault(variant.package.name, set()).add(variant.suffix)
    for variant in variants:
        required = variant.package.requires
        if required is not None and variant.suffix not in by_package.get(required, set()):
            problems.add(
                file,
                variant.line,
                f"{variant.name} on branch {branch.name} needs {variant.requires}, "
                f"which the branch does not build (add {variant.suffix} to {required})",
            )


def _isa(catalog: Catalog, name: str, line: int, branch: Branch, problems: Problems) -> Isa | None:
    isa = catalog.isas.get(name)
    if isa is None:
        problems.add(
            catalog.display_name,
            line,
            f'unknown ISA "{name}" on branch {branch.name}{did_you_mean(name, set(catalog.isas))}; '
            f"known: {', '.join(catalog.isas)}",
        )
    return isa


def _toolkit(
    branch: Branch, name: str | None, line: int, file: str, problems: Problems
) -> Toolkit | None:
    if not branch.toolkits:
        return None
    if name is None:
        return branch.toolkits[0]
    for toolkit in branch.toolkits:
        if toolkit.name == name:
            return toolkit
    known = [t.name for t in branch.toolkits]
    problems.add(
        file,
        line,
        f'unknown toolkit "{name}" on branch {branch.name}{did_you_mean(name, set(known))}; '
        f"known: {', '.join(known)}",
    )
    return None


def _gpu(
    catalog: Catalog, name: str, line: int, branch: Branch, toolkit: Toolkit, problems: Problems
) -> Gpu | None:
    gpu = catalog.gpus.get(name)
    if gpu is None:
        problems.add(
            catalog.display_name,
            line,
            f'unknown SM "{name}" on branch {branch.name}{did_you_mean(name, set(catalog.gpus))}; '
            f"known: {', '.join(catalog.gpus)}",
        )
        return None
    if not gpu.supports_cuda(toolkit.cuda):
        if gpu.min_cuda is not None and version_key(toolkit.cuda_short) < version_key(gpu.min_cuda):
            rule = f"needs CUDA >= {gpu.min_cuda}"
        else:
            rule = f"needs CUDA <= {gpu.max_cuda}"
        where = f"branch {branch.name}" + (
            f" toolkit {toolkit.name}" if len(branch.toolkits) > 1 else ""
        )
        problems.add(
            catalog.display_name,
            line,
            f"{name} {rule}, {where} has {toolkit.cuda}",
        )
        return None
    return gpu


def _pairs(gpu: Gpu, isa: Isa, line: int, branch: Branch, file: str, problems: Problems) -> bool:
    if gpu.isas is not None and isa.name not in gpu.isas:
        problems.add(
            file,
            line,
            f"{gpu.name} pairs only with ISAs {', '.join(gpu.isas)}; {isa.name} "
            f"({isa.platform}) is not one of them (branch {branch.name})",
        )
        return False
    return True
