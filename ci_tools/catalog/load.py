"""Load and validate the catalog (`catalog.yaml`).

Every problem names `file:line` and the rule it breaks; all problems of one file are reported
together. Validation has two stages: the shape of each table, then the rules that relate
tables (an SM inside its branch's CUDA range, ISA restrictions, a dependent package's
sibling, duplicate names), which `variants.expand` checks while building the variants.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ci_tools.catalog import grammar
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
from ci_tools.catalog.overlays import check_overlays, repository_root
from ci_tools.catalog.yamlsrc import (
    Node,
    Problems,
    check_keys,
    did_you_mean,
    kind_of,
    load_yaml,
    scalar_str,
    string_list,
    version_str,
)

CATALOG_FILE = "catalog.yaml"

T = TypeVar("T")

# The value grammars live in ci_tools/catalog/grammar.py (shared with the runner inventory and the
# JSON Schema); these names keep the checks below short.
_IDENT = grammar.IDENT
_PACKAGE_NAME = grammar.PACKAGE_NAME
_SM = grammar.SM
_BRANCH = grammar.BRANCH


def _ok(rule: grammar.Rule, text: str) -> bool:
    return rule.problem(text) is None


def find_catalog(root: Path) -> Path | None:
    path = root / CATALOG_FILE
    return path if path.is_file() else None


def load_catalog(path: Path, display_name: str | None = None) -> Catalog:
    """Read, validate and return the catalog; raise SourceError listing every problem."""
    from ci_tools.catalog.variants import check_variants

    root = load_yaml(path, display_name)
    problems = Problems()
    catalog = _build(root, path, problems)
    problems.raise_if_any()
    assert catalog is not None
    check_variants(catalog, problems)
    repository = repository_root(path.resolve().parent)
    if repository is not None:
        check_overlays(catalog, repository, problems)
    problems.raise_if_any()
    return catalog


def parse_catalog_text(text: str, name: str, path: Path | None = None) -> Catalog:
    """Validate catalog text that is not a file on disk (e.g. `git show REF:catalog.yaml`)."""
    from ci_tools.catalog.variants import check_variants
    from ci_tools.catalog.yamlsrc import parse_yaml

    root = parse_yaml(text, name)
    problems = Problems()
    catalog = _build(root, path or Path(name), problems)
    problems.raise_if_any()
    assert catalog is not None
    check_variants(catalog, problems)
    problems.raise_if_any()
    return catalog


def _build(root: Node, path: Path, problems: Problems) -> Catalog | None:
    if root.value is None:
        problems.add(root.file, 1, "the catalog is empty; it needs packages, isas, gpus, branches")
        return None
    if not check_keys(
        root, problems, what="the catalog", required=("packages", "isas", "gpus", "branches")
    ):
        return None
    packages = _mapping_of(root, "packages", problems, _package)
    isas = _mapping_of(root, "isas", problems, _isa)
    gpus = _mapping_of(root, "gpus", problems, _gpu)
    # Names of entries that failed their own checks still count as declared: one mistake,
    # one message.
    declared_isas = set(root.value["isas"]) if isinstance(root.value.get("isas"), dict) else set()
    for gpu in gpus.values():
        for isa in gpu.isas or ():
            if isa not in declared_isas:
                problems.add(
                    root.file,
                    gpu.line,
                    f'{gpu.name}: unknown ISA "{isa}" in its isas{did_you_mean(isa, set(isas))}',
                )
    for package in packages.values():
        if package.requires == package.name:
            problems.add(
                root.file,
                package.line,
                f"package {package.name} requires itself; `requires` names another package "
                "(Nix would recurse forever)",
            )
        elif package.requires is not None and package.requires in packages:
            base = packages[package.requires]
            if base.requires is not None:
                problems.add(
                    root.file,
                    package.line,
                    f"package {package.name} requires {base.name}, which requires "
                    f"{base.requires}: a required package must itself require nothing",
                )
        elif package.requires is not None and package.requires not in packages:
            problems.add(
                root.file,
                package.line,
                f'package {package.name} requires "{package.requires}", which is no package'
                f"{did_you_mean(package.requires, set(packages))}",
            )
    branches = _mapping_of(root, "branches", problems, _branch, name_rule=_BRANCH)
    for branch in branches.values():
        for source in branch.sources:
            if source.package not in packages:
                problems.add(
                    root.file,
                    source.line,
                    f'{branch.name}.sources: unknown package "{source.package}"'
                    f"{did_you_mean(source.package, set(packages))}",
                )
    return Catalog(
        path=path,
        display_name=root.file,
        packages=packages,
        isas=isas,
        gpus=gpus,
        branches=branches,
    )


def _mapping_of(
    root: Node,
    key: str,
    problems: Problems,
    build: Callable[[str, Node, Problems], T | None],
    name_rule: grammar.Rule = _IDENT,
) -> dict[str, T]:
    if key not in root.value:
        return {}
    table = root.child(key)
    if not table.is_mapping() or not table.value:
        problems.add(
            table.file, table.line, f"{key} must be a non-empty mapping, got {kind_of(table.value)}"
        )
        return {}
    out: dict[str, T] = {}
    for name, node in table.items():
        rule = _SM if key == "gpus" else (_PACKAGE_NAME if key == "packages" else name_rule)
        why = rule.problem(name)
        if why is not None:
            problems.add(node.file, node.line, f'{key}: "{name}" {why}')
            continue
        value_node = Node(node.value, node.file, node.line)
        item = build(name, value_node, problems)
        if item is not None:
            out[name] = item
    return out


def _optional_str(
    node: Node, key: str, problems: Problems, what: str, rule: grammar.Rule | None = None
) -> str | None:
    if key not in node.value:
        return None
    return scalar_str(node.child(key), problems, what, rule)


def _package(name: str, node: Node, problems: Problems) -> Package | None:
    if not check_keys(
        node,
        problems,
        what=f"package {name}",
        required=("attribute",),
        optional=("import_name", "requires"),
    ):
        return None
    attribute = (
        scalar_str(node.child("attribute"), problems, f"{name}.attribute")
        if "attribute" in node.value
        else None
    )
    if attribute is not None and not _ok(grammar.NIX_IDENT, attribute):
        problems.add(
            node.file,
            node.value_line("attribute"),
            f'{name}.attribute "{attribute}" is not a Nix attribute name',
        )
        attribute = None
    if attribute is None:
        return None
    import_name = (
        _optional_str(node, "import_name", problems, f"{name}.import_name", grammar.NIX_IDENT)
        or attribute
    )
    requires = _optional_str(node, "requires", problems, f"{name}.requires", grammar.PACKAGE_NAME)
    return Package(
        name=name, attribute=attribute, import_name=import_name, requires=requires, line=node.line
    )


def _isa(name: str, node: Node, problems: Problems) -> Isa | None:
    ok = check_keys(
        node,
        problems,
        what=f"ISA {name}",
        required=(
            "platform",
            "description",
            "level",
            "compiler_flags",
            "cpuinfo",
            "torch_capability",
        ),
        optional=("disables", "workload", "hardware"),
    )
    if not ok or any(
        k not in node.value for k in ("platform", "level", "compiler_flags", "cpuinfo")
    ):
        return None
    platform_text = scalar_str(node.child("platform"), problems, f"{name}.platform")
    linux = (Platform.X86_64_LINUX.value, Platform.AARCH64_LINUX.value)
    if platform_text not in linux:
        problems.add(
            node.file,
            node.value_line("platform"),
            f'{name}.platform must be one of {", ".join(linux)}, got "{platform_text}"',
        )
        return None
    level = node.value["level"]
    if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 100:
        problems.add(
            node.file, node.value_line("level"), f"{name}.level must be a whole number 0 to 100"
        )
        return None
    flags = string_list(
        node.child("compiler_flags"),
        problems,
        f"{name}.compiler_flags",
        grammar.COMPILER_FLAG,
        non_empty=True,
    )
    # An empty cpuinfo would make every host look able to run the ISA (no SIGILL guard).
    cpuinfo = string_list(
        node.child("cpuinfo"), problems, f"{name}.cpuinfo", grammar.CPUINFO_FLAG, non_empty=True
    )
    disables = (
        string_list(node.child("disables"), problems, f"{name}.disables", grammar.FEATURE)
        if "disables" in node.value
        else []
    )
    return Isa(
        name=name,
        platform=Platform(platform_text),
        description=_optional_str(node, "description", problems, f"{name}.description") or name,
        level=level,
        compiler_flags=tuple(f for f, _ in flags),
        cpuinfo=tuple(f for f, _ in cpuinfo),
        torch_capability=_optional_str(
            node, "torch_capability", problems, f"{name}.torch_capability", grammar.TORCH_CAPABILITY
        )
        or "DEFAULT",
        disables=tuple(d for d, _ in disables),
        workload=_optional_str(node, "workload", problems, f"{name}.workload", grammar.WORKLOAD),
        hardware=_optional_str(node, "hardware", problems, f"{name}.hardware") or "",
        line=node.line,
    )


def _gpu(name: str, node: Node, problems: Problems) -> Gpu | None:
    if not check_keys(
        node,
        problems,
        what=f"GPU {name}",
        required=("capability", "family", "hardware"),
        optional=("min_cuda", "max_cuda", "isas", "cudnn"),
    ):
        return None
    if "capability" not in node.value:
        return None
    capability = version_str(node.child("capability"), problems, f"{name}.capability")
    if capability is not None and not _ok(grammar.CAPABILITY, capability):
        problems.add(
            node.file,
            node.value_line("capability"),
            f'{name}.capability "{capability}" must look like "9.0"',
        )
        capability = None
    if capability is not None and capability.replace(".", "") != name.removeprefix("sm"):
        problems.add(
            node.file,
            node.value_line("capability"),
            f'{name}.capability "{capability}" does not match its name (sm{capability.replace(".", "")})',
        )
    hardware = (
        string_list(node.child("hardware"), problems, f"{name}.hardware")
        if "hardware" in node.value
        else []
    )
    min_cuda = (
        version_str(node.child("min_cuda"), problems, f"{name}.min_cuda")
        if "min_cuda" in node.value
        else None
    )
    max_cuda = (
        version_str(node.child("max_cuda"), problems, f"{name}.max_cuda")
        if "max_cuda" in node.value
        else None
    )
    isas = None
    if "isas" in node.value:
        isas = tuple(i for i, _ in string_list(node.child("isas"), problems, f"{name}.isas"))
    cudnn = node.value.get("cudnn", True)
    if not isinstance(cudnn, bool):
        problems.add(node.file, node.value_line("cudnn"), f"{name}.cudnn must be true or false")
        cudnn = True
    if capability is None:
        return None
    return Gpu(
        name=name,
        capability=capability,
        family=_optional_str(node, "family", problems, f"{name}.family") or "",
        hardware=tuple(h for h, _ in hardware),
        min_cuda=min_cuda,
        max_cuda=max_cuda,
        isas=isas,
        cudnn=cudnn,
        line=node.line,
    )


_BRANCH_KEYS = ("versions", "python", "nixpkgs", "variants")
_ONE_TOOLKIT_KEYS = ("cuda", "cuda_packages", "min_driver")


def _branch(name: str, node: Node, problems: Problems) -> Branch | None:
    """A branch: one CUDA toolkit stated directly (`cuda`, `cuda_packages`, `min_driver`), or
    several under `toolkits`, each with its own CUDA, nixpkgs set, pin and overlays."""
    several = isinstance(node.value, dict) and "toolkits" in node.value
    required = _BRANCH_KEYS + (("toolkits",) if several else _ONE_TOOLKIT_KEYS)
    optional = ("overlays", "sources") + (() if several else ("allow_broken",))
    if not check_keys(node, problems, what=f"branch {name}", required=required, optional=optional):
        return None
    if any(k not in node.value for k in required if k != "min_driver"):
        return None
    versions: dict[str, str] = {}
    vnode = node.child("versions")
    if vnode.is_mapping():
        for pkg, child in vnode.items():
            text = version_str(
                Node(child.value, child.file, vnode.value_line(pkg)),
                problems,
                f"{name}.versions.{pkg}",
            )
            if text is not None:
                versions[pkg] = text
    else:
        problems.add(vnode.file, vnode.line, f"{name}.versions must map package names to versions")
    pythons = []
    for text, line in string_list(
        node.child("python"),
        problems,
        f"{name}.python",
        grammar.PYTHON,
        strict=True,
        non_empty=True,
    ):
        if text in pythons:
            problems.add(node.file, line, f'{name}.python lists "{text}" twice')
        else:
            pythons.append(text)
    rev, sha256 = _nixpkgs(name, node.child("nixpkgs"), problems)
    overlays, overlay_lines = _overlays(node, name, problems)
    sources = _sources(name, node, versions, problems)
    if several:
        toolkits = _toolkits(name, node.child("toolkits"), rev, sha256, problems)
    else:
        one = _toolkit(name, None, node, rev, sha256, problems)
        toolkits = [one] if one is not None else []
    variants = _variant_sets(name, node.child("variants"), problems, several)
    if rev is None or not toolkits:
        return None
    first = toolkits[0]
    return Branch(
        name=name,
        versions=versions,
        cuda=first.cuda,
        python=tuple(pythons),
        min_driver=first.min_driver,
        nixpkgs_rev=rev,
        nixpkgs_sha256=sha256,
        cuda_packages=first.cuda_packages,
        overlays=overlays,
        overlay_lines=overlay_lines,
        variants=variants,
        toolkits=tuple(toolkits),
        sources=tuple(sources),
        line=node.line,
    )


def _toolkits(
    branch: str, node: Node, rev: str | None, sha256: str | None, problems: Problems
) -> list[Toolkit]:
    if not node.is_mapping() or not node.value:
        problems.add(
            node.file, node.line, f"{branch}.toolkits must map toolkit names (cuda12_8) to toolkits"
        )
        return []
    out: list[Toolkit] = []
    seen: dict[str, Toolkit] = {}
    for key, child in node.items():
        tnode = Node(child.value, child.file, child.line)
        if not _ok(grammar.TOOLKIT, key):
            problems.add(
                tnode.file,
                tnode.line,
                f'{branch}.toolkits: "{key}" is not a toolkit name like cuda12_8',
            )
            continue
        toolkit = _toolkit(branch, key, tnode, rev, sha256, problems)
        if toolkit is None:
            continue
        if f"cuda{toolkit.cuda_tag}" != key:
            problems.add(
                tnode.file,
                tnode.value_line("cuda"),
                f"{branch}.toolkits.{key}: its CUDA {toolkit.cuda} is cuda{toolkit.cuda_tag}, "
                f"not {key}",
            )
            continue
        twin = seen.get(toolkit.cuda_short)
        if twin is not None:
            problems.add(
                tnode.file,
                tnode.line,
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
    node: Node,
    rev: str | None,
    sha256: str | None,
    problems: Problems,
) -> Toolkit | None:
    """One toolkit: `key` None for a branch that states its one toolkit directly."""
    what = branch if key is None else f"{branch}.toolkits.{key}"
    if key is not None and not check_keys(
        node,
        problems,
        what=f"toolkit {what}",
        required=("cuda", "cuda_packages", "min_driver"),
        optional=("nixpkgs", "allow_broken", "overlays"),
    ):
        return None
    if any(k not in node.value for k in ("cuda", "cuda_packages")):
        return None
    cuda = version_str(node.child("cuda"), problems, f"{what}.cuda")
    min_driver = node.value.get("min_driver", 0)
    if (
        not isinstance(min_driver, int)
        or isinstance(min_driver, bool)
        or not 0 <= min_driver < 10000
    ):
        problems.add(
            node.file,
            node.value_line("min_driver"),
            f"{what}.min_driver must be a whole number like 550",
        )
        min_driver = 0
    cuda_packages = scalar_str(node.child("cuda_packages"), problems, f"{what}.cuda_packages")
    if cuda_packages is not None and not _ok(grammar.CUDA_PACKAGES, cuda_packages):
        problems.add(
            node.file,
            node.value_line("cuda_packages"),
            f'{what}.cuda_packages "{cuda_packages}" must be a nixpkgs attribute like cudaPackages_12_9',
        )
    elif cuda is not None and cuda_packages and cuda_packages != "cudaPackages":
        # cudaPackages_12_9 for CUDA 12.9; an alias by major (cudaPackages_13) for CUDA 13.x.
        parts = cuda.split(".")
        wanted = "cudaPackages_" + "_".join(parts[:2])
        if cuda_packages not in (wanted, f"cudaPackages_{parts[0]}"):
            problems.add(
                node.file,
                node.value_line("cuda_packages"),
                f"{what}.cuda_packages is {cuda_packages} but "
                f"{'the branch' if key is None else 'the toolkit'}'s CUDA {cuda} is {wanted}",
            )
    allow_broken = node.value.get("allow_broken", False)
    if not isinstance(allow_broken, bool):
        problems.add(
            node.file, node.value_line("allow_broken"), f"{what}.allow_broken must be true or false"
        )
        allow_broken = False
    own_rev, own_sha256 = rev, sha256
    if key is not None and "nixpkgs" in node.value:
        own_rev, own_sha256 = _nixpkgs(what, node.child("nixpkgs"), problems)
    overlays: tuple[str, ...] = ()
    overlay_lines: tuple[int, ...] = ()
    if key is not None:
        overlays, overlay_lines = _overlays(node, what, problems)
    if cuda is None or cuda_packages is None or own_rev is None:
        return None
    return Toolkit(
        name=key if key is not None else "cuda" + major_minor(cuda).replace(".", "_"),
        cuda=cuda,
        cuda_packages=cuda_packages,
        nixpkgs_rev=own_rev,
        nixpkgs_sha256=own_sha256,
        min_driver=min_driver,
        allow_broken=allow_broken,
        overlays=overlays,
        overlay_lines=overlay_lines,
        line=node.line,
    )


def _overlays(node: Node, what: str, problems: Problems) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if "overlays" not in node.value:
        return (), ()
    names: list[str] = []
    lines: list[int] = []
    for text, line in string_list(node.child("overlays"), problems, f"{what}.overlays"):
        if not _ok(grammar.OVERLAY, text):
            problems.add(
                node.file,
                line,
                f'{what}.overlays: "{text}" is not an overlay name (nix/overlays/NAME.nix, '
                "NAME of lower-case letters, digits and dashes)",
            )
        elif text in names:
            problems.add(node.file, line, f'{what}.overlays lists "{text}" twice')
        else:
            names.append(text)
            lines.append(line)
    return tuple(names), tuple(lines)


def _sources(branch: str, node: Node, versions: dict[str, str], problems: Problems) -> list[Source]:
    if "sources" not in node.value:
        return []
    snode = node.child("sources")
    if not snode.is_mapping():
        problems.add(
            snode.file,
            snode.line,
            f"{branch}.sources must map package names to {{version, hash}}",
        )
        return []
    out: list[Source] = []
    for package, child in snode.items():
        entry = Node(child.value, child.file, child.line)
        what = f"{branch}.sources.{package}"
        if not check_keys(entry, problems, what=what, required=("version", "hash")) or any(
            k not in entry.value for k in ("version", "hash")
        ):
            continue
        version = version_str(entry.child("version"), problems, f"{what}.version")
        hash_ = scalar_str(entry.child("hash"), problems, f"{what}.hash")
        if hash_ is not None and not _ok(grammar.SRI_SHA256, hash_):
            problems.add(
                entry.file,
                entry.value_line("hash"),
                f"{what}.hash must be the source's SRI hash (sha256-...=, 44 characters after "
                "the dash), as nix-prefetch-github prints it",
            )
            hash_ = None
        if version is not None and versions.get(package) not in (None, version):
            problems.add(
                entry.file,
                entry.value_line("version"),
                f"{what}.version {version} differs from {branch}.versions.{package} "
                f"{versions[package]}: the source override is what the branch ships",
            )
        if version is not None and hash_ is not None:
            out.append(Source(package=package, version=version, hash=hash_, line=entry.line))
    return out


def _nixpkgs(branch: str, node: Node, problems: Problems) -> tuple[str | None, str | None]:
    if not check_keys(
        node, problems, what=f"{branch}.nixpkgs", required=("rev",), optional=("sha256",)
    ):
        return None, None
    rev = (
        scalar_str(node.child("rev"), problems, f"{branch}.nixpkgs.rev")
        if "rev" in node.value
        else None
    )
    if rev is not None and not _ok(grammar.NIXPKGS_REV, rev):
        problems.add(
            node.file,
            node.value_line("rev"),
            f'{branch}.nixpkgs.rev "{rev}" must be a full 40-hex-digit commit',
        )
        rev = None
    sha256 = None
    if "sha256" in node.value:
        sha256 = scalar_str(node.child("sha256"), problems, f"{branch}.nixpkgs.sha256")
        if sha256 is not None and not _ok(grammar.NIX_SHA256, sha256):
            problems.add(
                node.file,
                node.value_line("sha256"),
                f"{branch}.nixpkgs.sha256 must be a Nix hash (sha256-...= SRI, 52 base32 or 64 hex digits)",
            )
    return rev, sha256


def _variant_sets(
    branch: str, node: Node, problems: Problems, several: bool = False
) -> dict[str, VariantSet]:
    if not node.is_mapping() or not node.value:
        problems.add(
            node.file, node.line, f"{branch}.variants must map package names to variant sets"
        )
        return {}
    out: dict[str, VariantSet] = {}
    for package, set_node in node.items():
        set_node = Node(set_node.value, set_node.file, set_node.line)
        what = f"{branch}.variants.{package}"
        if not check_keys(set_node, problems, what=what, optional=("cpu", "gpu", "darwin_mps")):
            continue
        cpu: tuple[tuple[str, int], ...] = ()
        if "cpu" in set_node.value:
            cpu = tuple(string_list(set_node.child("cpu"), problems, f"{what}.cpu"))
        gpu: list[tuple[str, str, int]] = []
        toolkits: list[str | None] = []
        if "gpu" in set_node.value:
            gnode = set_node.child("gpu")
            if not gnode.is_mapping():
                problems.add(gnode.file, gnode.line, f"{what}.gpu must map SMs to lists of ISAs")
            elif several:
                # A branch with several toolkits: gpu maps each toolkit to its SMs.
                for toolkit, tnode in gnode.items():
                    inner = Node(tnode.value, tnode.file, gnode.value_line(toolkit))
                    if not inner.is_mapping():
                        problems.add(
                            inner.file,
                            inner.line,
                            f"{what}.gpu.{toolkit} must map SMs to lists of ISAs "
                            "(this branch has toolkits: gpu maps toolkit names to SMs)",
                        )
                        continue
                    entries = _gpu_entries(inner, f"{what}.gpu.{toolkit}", problems)
                    gpu.extend(entries)
                    toolkits.extend([toolkit] * len(entries))
            else:
                entries = _gpu_entries(gnode, f"{what}.gpu", problems)
                gpu.extend(entries)
                toolkits.extend([None] * len(entries))
        darwin = set_node.value.get("darwin_mps", False)
        if not isinstance(darwin, bool):
            problems.add(
                set_node.file,
                set_node.value_line("darwin_mps"),
                f"{what}.darwin_mps must be true or false",
            )
            darwin = False
        out[package] = VariantSet(
            cpu=cpu,
            gpu=tuple(gpu),
            gpu_toolkits=tuple(toolkits),
            darwin_mps=darwin,
            darwin_line=set_node.key_line("darwin_mps") if darwin else 0,
            line=set_node.line,
        )
    return out


def _gpu_entries(gnode: Node, what: str, problems: Problems) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    for sm, isas_node in gnode.items():
        listed = Node(isas_node.value, isas_node.file, gnode.value_line(sm))
        entries = string_list(listed, problems, f"{what}.{sm}")
        # An aliased list (*six_isas) keeps its anchor's lines: point at the SM instead.
        out.extend(
            (sm, isa, line if line >= isas_node.line else isas_node.line) for isa, line in entries
        )
    return out
