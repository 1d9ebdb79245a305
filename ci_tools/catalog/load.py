"""Load and validate the catalog (`catalog.yaml`).

Every problem names `file:line` and the rule it breaks; all problems of one file are reported
together. Validation has two stages: the shape of each table (declared in `tables.CATALOG`,
checked by `shape`), then the rules that relate values and tables, here and in
`variants.check_variants` (an SM inside its toolkit's CUDA range, ISA restrictions, a
dependent package's sibling, duplicate names, overlay files).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ci_tools.catalog import tables
from ci_tools.catalog.model import (
    Branch,
    Catalog,
    Gpu,
    Isa,
    Package,
    Platform,
    Source,
    Toolkit,
    VariantSet,
    major_minor,
)
from ci_tools.catalog.overlays import check_overlays, prefetch, repository_root
from ci_tools.catalog.shape import Items, Record
from ci_tools.catalog.variants import check_variants
from ci_tools.catalog.yamlsrc import Node, Problems, did_you_mean, load_yaml, parse_yaml

T = TypeVar("T")


def load_catalog(path: Path, display_name: str | None = None) -> Catalog:
    """Read, validate and return the catalog; raise SourceError listing every problem."""
    repository = repository_root(path.resolve().parent)
    prefetch(repository)  # Nix parses the overlays while the YAML is read
    return _validated(load_yaml(path, display_name), path, repository)


def parse_catalog_text(text: str, name: str, path: Path | None = None) -> Catalog:
    """Validate catalog text that is not a file on disk (e.g. `git show REF:catalog.yaml`)."""
    return _validated(parse_yaml(text, name), path or Path(name), None)


def _validated(root: Node, path: Path, repository: Path | None) -> Catalog:
    """The tables' shapes first; then, once they are sound, the variants and overlays."""
    problems = Problems()
    catalog = _build(root, path, problems)
    problems.raise_if_any()
    assert catalog is not None
    check_variants(catalog, problems)
    if repository is not None:
        check_overlays(catalog, repository, problems)
    problems.raise_if_any()
    return catalog


def _build(root: Node, path: Path, problems: Problems) -> Catalog | None:
    record = tables.CATALOG.check_document(root, problems)
    if record is None:
        return None
    file = root.file
    tables_of = {key: record.get(key) for key in ("packages", "isas", "gpus", "branches")}
    declared = {key: set(t.written()) if t is not None else set() for key, t in tables_of.items()}
    packages = _each(tables_of["packages"], _package)
    isas = _each(tables_of["isas"], _isa)
    gpus = {}
    for name, entry in _entries(tables_of["gpus"]):
        gpu = _gpu(name, entry, declared["isas"], problems)
        if gpu is not None:
            gpus[name] = gpu
    _check_requires(packages, declared["packages"], file, problems)
    branches = {}
    for name, entry in _entries(tables_of["branches"]):
        branch = _branch(name, entry, declared["packages"], problems)
        if branch is not None:
            branches[name] = branch
    return Catalog(
        path=path,
        display_name=file,
        packages=packages,
        isas=isas,
        gpus=gpus,
        branches=branches,
        org=record.get("org"),
    )


def _entries(table: Record | None) -> Iterable[tuple[str, Any]]:
    """A checked mapping's sound entries; none where the mapping itself was wrong."""
    return table.items() if table is not None else ()


def _each(table: Record | None, build: Callable[[str, Record], T]) -> dict[str, T]:
    """The records built from a table's sound entries."""
    return {name: build(name, entry) for name, entry in _entries(table) if entry.ok}


def _values(items: Items | None) -> tuple[Any, ...]:
    return tuple(value for value, _ in items or ())


def _package(name: str, entry: Record) -> Package:
    attribute = entry["attribute"]
    return Package(
        name=name,
        attribute=attribute,
        import_name=entry["import_name"] or attribute,
        requires=entry["requires"],
        line=entry.line,
    )


def _isa(name: str, entry: Record) -> Isa:
    return Isa(
        name=name,
        platform=Platform(entry["platform"]),
        description=entry["description"] or name,
        level=entry["level"],
        compiler_flags=_values(entry["compiler_flags"]),
        cpuinfo=_values(entry["cpuinfo"]),
        torch_capability=entry["torch_capability"],
        disables=_values(entry["disables"]),
        workload=entry["workload"],
        hardware=entry["hardware"],
        line=entry.line,
    )


def _gpu(name: str, entry: Record, isas: set[str], problems: Problems) -> Gpu | None:
    file = entry.node.file
    capability = entry["capability"]
    if capability is not None and capability.replace(".", "") != name.removeprefix("sm"):
        problems.add(
            file,
            entry.value_line("capability"),
            f'{name}.capability "{capability}" does not match its name '
            f"(sm{capability.replace('.', '')})",
        )
    for isa, line in entry["isas"] or ():
        # Names of ISAs that failed their own checks still count as declared: one mistake,
        # one message.
        if isa not in isas:
            problems.add(
                file, line, f'{name}: unknown ISA "{isa}" in its isas{did_you_mean(isa, isas)}'
            )
    if not entry.ok:
        return None
    return Gpu(
        name=name,
        capability=capability,
        family=entry["family"],
        hardware=_values(entry["hardware"]),
        min_cuda=entry["min_cuda"],
        max_cuda=entry["max_cuda"],
        isas=_values(entry["isas"]) if entry["isas"] is not None else None,
        cudnn=entry["cudnn"],
        line=entry.line,
    )


# What nix/builders/ can build: a package without `requires` goes through the torch builders
# (torch-cpu/-cuda/-darwin.nix), which override `cudaSupport`, `gpuTargets` and MKLDNN, formal
# arguments only nixpkgs' torch has (a function without `...` refuses any other); a package
# with `requires` goes through torch-dependent.nix, which passes `torch`, which torch lacks.
TORCH_ATTRIBUTE = "torch"


def _check_builder(package: Package, file: str, problems: Problems) -> None:
    if package.requires is None and package.attribute != TORCH_ATTRIBUTE:
        problems.add(
            file,
            package.line,
            f"package {package.name} (attribute {package.attribute}) has no `requires`: only "
            f"{TORCH_ATTRIBUTE} builds on its own; name the package it builds against "
            "(requires: pytorch)",
        )
    elif package.requires is not None and package.attribute == TORCH_ATTRIBUTE:
        problems.add(
            file,
            package.line,
            f"package {package.name} is {TORCH_ATTRIBUTE} and `requires` "
            f"{package.requires}: torch builds on its own (it takes no `torch` argument); "
            "leave `requires` out",
        )


def _check_requires(
    packages: dict[str, Package], declared: set[str], file: str, problems: Problems
) -> None:
    for package in packages.values():
        _check_builder(package, file, problems)
        required = package.requires
        if required == package.name:
            problems.add(
                file,
                package.line,
                f"package {package.name} requires itself; `requires` names another package "
                "(Nix would recurse forever)",
            )
        elif required is not None and required in packages:
            base = packages[required]
            if base.requires is not None:
                problems.add(
                    file,
                    package.line,
                    f"package {package.name} requires {base.name}, which requires "
                    f"{base.requires}: a required package must itself require nothing",
                )
        elif required is not None and required not in declared:
            problems.add(
                file,
                package.line,
                f'package {package.name} requires "{required}", which is no package'
                f"{did_you_mean(required, declared)}",
            )


def _branch(name: str, entry: Record, packages: set[str], problems: Problems) -> Branch | None:
    """A branch: one CUDA toolkit stated directly, or several under `toolkits`."""
    versions = entry["versions"]
    sources = _sources(name, entry, versions, packages, problems)
    nixpkgs = entry["nixpkgs"]
    rev, sha256 = (nixpkgs["rev"], nixpkgs["sha256"]) if nixpkgs is not None else (None, None)
    by_toolkit = entry.table is tables.BRANCH_BY_TOOLKIT
    if by_toolkit:
        toolkits = _toolkits(name, entry["toolkits"], rev, sha256, problems)
    else:
        one = _toolkit(name, None, entry, rev, sha256, problems)
        toolkits = [one] if one is not None else []
    if not entry.ok or not toolkits or rev is None:
        return None
    first = toolkits[0]
    overlays = entry["overlays"]
    return Branch(
        name=name,
        versions=dict(versions.items()),
        cuda=first.cuda,
        python=_values(entry["python"]),
        min_driver=first.min_driver,
        nixpkgs_rev=rev,
        nixpkgs_sha256=sha256,
        cuda_packages=first.cuda_packages,
        overlays=_values(overlays),
        overlay_lines=tuple(line for _, line in overlays),
        variants=_variant_sets(entry["variants"], by_toolkit),
        toolkits=tuple(toolkits),
        sources=tuple(sources),
        line=entry.line,
    )


def _toolkits(
    branch: str, table: Record | None, rev: str | None, sha256: str | None, problems: Problems
) -> list[Toolkit]:
    out: list[Toolkit] = []
    seen: dict[str, Toolkit] = {}
    for key, entry in _entries(table):
        toolkit = _toolkit(branch, key, entry, rev, sha256, problems)
        if toolkit is None:
            continue
        file = entry.node.file
        if f"cuda{toolkit.cuda_tag}" != key:
            problems.add(
                file,
                entry.value_line("cuda"),
                f"{branch}.toolkits.{key}: its CUDA {toolkit.cuda} is cuda{toolkit.cuda_tag}, "
                f"not {key}",
            )
            continue
        twin = seen.get(toolkit.cuda_short)
        if twin is not None:
            problems.add(
                file,
                entry.line,
                f"{branch}: toolkits {twin.name} and {key} both have CUDA {toolkit.cuda_short} "
                "(one toolkit per CUDA version on a branch)",
            )
            continue
        seen[toolkit.cuda_short] = toolkit
        out.append(toolkit)
    return out


def _toolkit(
    branch: str,
    key: str | None,
    entry: Record,
    rev: str | None,
    sha256: str | None,
    problems: Problems,
) -> Toolkit | None:
    """One toolkit: `key` None for a branch that states its one toolkit directly."""
    what = branch if key is None else f"{branch}.toolkits.{key}"
    cuda, cuda_packages = entry["cuda"], entry["cuda_packages"]
    if cuda is not None and cuda_packages is not None and cuda_packages != "cudaPackages":
        # cudaPackages_12_9 for CUDA 12.9; an alias by major (cudaPackages_13) for CUDA 13.x.
        parts = cuda.split(".")
        wanted = "cudaPackages_" + "_".join(parts[:2])
        if cuda_packages not in (wanted, f"cudaPackages_{parts[0]}"):
            problems.add(
                entry.node.file,
                entry.value_line("cuda_packages"),
                f"{what}.cuda_packages is {cuda_packages} but "
                f"{'the branch' if key is None else 'the toolkit'}'s CUDA {cuda} is {wanted}",
            )
    own = entry["nixpkgs"] if key is not None else None
    if own is not None:
        rev, sha256 = own["rev"], own["sha256"]
    if not entry.ok or rev is None:
        return None
    overlays = entry["overlays"] if key is not None else ()
    return Toolkit(
        name=key if key is not None else "cuda" + major_minor(cuda).replace(".", "_"),
        cuda=cuda,
        cuda_packages=cuda_packages,
        nixpkgs_rev=rev,
        nixpkgs_sha256=sha256,
        min_driver=entry["min_driver"],
        allow_broken=entry["allow_broken"],
        overlays=_values(overlays),
        overlay_lines=tuple(line for _, line in overlays),
        line=entry.line,
    )


def _sources(
    branch: str,
    entry: Record,
    versions: Record | None,
    packages: set[str],
    problems: Problems,
) -> list[Source]:
    out: list[Source] = []
    for package, source in _entries(entry["sources"]):
        file, what = source.node.file, f"{branch}.sources.{package}"
        if package not in packages:
            problems.add(
                file,
                source.line,
                f'{what}: unknown package "{package}"{did_you_mean(package, packages)}',
            )
        version = source["version"]
        listed = versions.get(package) if versions is not None else None
        if version is not None and listed not in (None, version):
            problems.add(
                file,
                source.value_line("version"),
                f"{what}.version {version} differs from {branch}.versions.{package} "
                f"{listed}: the source override is what the branch ships",
            )
        elif source.ok:
            out.append(
                Source(package=package, version=version, hash=source["hash"], line=source.line)
            )
    return out


def _variant_sets(table: Record, by_toolkit: bool) -> dict[str, VariantSet]:
    out: dict[str, VariantSet] = {}
    for package, entry in table.items():
        gpu: list[tuple[str, str, int]] = []
        toolkits: list[str | None] = []
        if by_toolkit:
            for toolkit, sms in _entries(entry["gpu"]):
                entries = _gpu_entries(sms)
                gpu.extend(entries)
                toolkits.extend([toolkit] * len(entries))
        else:
            gpu = _gpu_entries(entry["gpu"])
            toolkits = [None] * len(gpu)
        darwin = entry["darwin_mps"]
        out[package] = VariantSet(
            cpu=entry["cpu"],
            gpu=tuple(gpu),
            gpu_toolkits=tuple(toolkits),
            darwin_mps=darwin,
            darwin_line=entry.key_line("darwin_mps") if darwin else 0,
            line=entry.line,
        )
    return out


def _gpu_entries(sms: Record | None) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    for sm, isas in _entries(sms):
        at = sms.key_line(sm) if sms is not None else 0
        # An aliased list (*six_isas) keeps its anchor's lines: point at the SM instead.
        out.extend((sm, isa, max(line, at)) for isa, line in isas)
    return out
