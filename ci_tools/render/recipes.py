"""Catalog -> recipe text: every file `ci-tools generate` writes for one branch.

Pure apart from reading the Jinja2 templates: the result is a list of (path, text) pairs,
nothing is written here (see `generated.py`). Jinja2 is imported inside the functions so that
commands which never render (`matrix`) never pay for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base import packaged
from ci_tools.base.errors import InputError
from ci_tools.catalog import layout
from ci_tools.catalog.model import Catalog, Kind
from ci_tools.catalog.variants import Variant, expand

if TYPE_CHECKING:
    import jinja2


@dataclass(frozen=True, kw_only=True)
class RenderedFile:
    path: str  # relative to the output directory: "pytorch-python313-cpu-avx2.nix"
    text: str


def header(catalog_file: str, branch: str, comment: str = "#") -> str:
    """The first line of every generated file: says so, and how to regenerate it."""
    return (
        f"{comment} {layout.GENERATED_MARKER} from {catalog_file} (branch {branch}). "
        f"Do not edit: run `ci-tools generate --branch {branch}`"
    )


def is_generated(text: str) -> bool:
    """A file `generate` may overwrite or delete: its first lines carry the marker."""
    return any(layout.GENERATED_MARKER in line for line in text.splitlines()[:3])


def nix_literal(value: object) -> str:
    """A Python value as a Nix expression; strings are escaped so catalog text stays data."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        escaped = (
            value.replace("\\", "\\\\")
            .replace('"', '\\"')
            .replace("${", "\\${")
            .replace("\n", "\\n")
        )
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[ " + "".join(nix_literal(item) + " " for item in value) + "]"
    raise TypeError(f"no Nix literal for {type(value).__name__}")


def one_line(value: object) -> str:
    """Catalog text inside a `#` comment: a newline would end the comment."""
    return " ".join(str(value).split())


def environment(templates_dir: Path | None = None) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=packaged.loader("ci_tools.render", templates_dir),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # noqa: S701 - Nix and Markdown, not HTML; `nix` escapes strings
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["nix"] = nix_literal
    env.filters["one_line"] = one_line
    return env


def render_template(env: jinja2.Environment, name: str, context: Mapping[str, object]) -> str:
    """Render template `name` ("pkgs/..."); a broken template is named by file:line."""
    import jinja2

    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{exc.filename or name}:{exc.lineno}: {exc.message}") from None
    except jinja2.TemplateNotFound:
        raise InputError(
            f"{name}: template missing from ci-tools' templates; reinstall ci-tools"
        ) from None
    except jinja2.UndefinedError as exc:
        raise InputError(f"{name}: {exc.message}") from None


def pin_context(catalog: Catalog, variant: Variant) -> dict[str, object]:
    """What the recipe passes to `nix/nixpkgs.nix`: the pin, config and overlays of its toolkit.

    CUDA recipes set `cudaCapabilities` to their one SM, so every CUDA library in the closure
    (MAGMA first of all) is compiled for that SM only: a per-SM MAGMA.
    """
    branch = variant.branch
    rev, sha256 = variant.pin
    toolkit = variant.toolkit
    sources = [
        (catalog.packages[s.package].attribute, s)
        for s in branch.sources
        if s.package in catalog.packages
    ]
    return {
        "rev": rev,
        "sha256": sha256,
        "cuda_packages": toolkit.cuda_packages if toolkit is not None else None,
        "capabilities": [variant.gpu.capability] if variant.gpu is not None else [],
        "allow_broken": toolkit.allow_broken if toolkit is not None else False,
        "sources": sources,
        "overlays": list(branch.overlays) + (list(toolkit.overlays) if toolkit else []),
    }


def toolkit_comment(variant: Variant) -> str:
    toolkit = variant.toolkit
    rev = variant.pin[0]
    if toolkit is None:
        return f"Branch {variant.branch.name}'s nixpkgs {rev[:12]}, without CUDA."
    broken = (
        " allowBroken: nixpkgs marks torch broken for this CUDA." if toolkit.allow_broken else ""
    )
    return (
        f"Toolkit {toolkit.name} of branch {variant.branch.name}: CUDA {toolkit.cuda} "
        f"({toolkit.cuda_packages}) from nixpkgs {rev[:12]}.{broken}"
    )


def describe(variant: Variant) -> str:
    """One line for `meta.description` and the recipe's comment, from build facts only.

    The recipe's text is an input of its build (its fingerprint), so the descriptive catalog
    fields (a GPU's family and hardware, an ISA's description) stay out of it: adding a GPU
    to a hardware list would otherwise schedule rebuilds of identical store paths (`meta` is
    not part of the derivation). The reference tables (docs/reference.md) carry them instead.
    """
    version = f"{variant.package.name} {variant.version or ''}".strip()
    python = f"Python {variant.python}"
    if variant.requires is not None:
        return f"{version} built against {variant.requires}, {python}"
    if variant.kind is Kind.DARWIN:
        return f"{version} for Apple Silicon (MPS), {python}"
    assert variant.isa is not None
    if variant.kind is Kind.CPU:
        return f"{version}, CPU only, {variant.isa.name}, {python}"
    assert variant.gpu is not None
    gpu = variant.gpu
    return (
        f"{version} for {gpu.name.upper()} (compute capability {gpu.capability}), "
        f"CUDA {variant.toolkit.cuda if variant.toolkit else variant.branch.cuda}, "
        f"{variant.isa.name}, {python}"
    )


def recipe_context(catalog: Catalog, variant: Variant) -> dict[str, object]:
    catalog_file = catalog.path.name
    return {
        "header": header(catalog_file, variant.branch.name),
        "catalog_file": catalog_file,
        "description": describe(variant),
        "v": variant,
        "pin": pin_context(catalog, variant),
        "toolkit_comment": toolkit_comment(variant),
        "builder": layout.builder_of(variant).rsplit("/", 1)[-1],
    }


def render_branch(
    catalog: Catalog, branch_name: str, env: jinja2.Environment
) -> tuple[RenderedFile, ...]:
    """Every recipe of the branch; raises before anything is written.

    The shared Nix code (nix/builders, nix/nixpkgs.nix, nix/overlays) is not rendered: it is
    the same for every branch, and flox's NEF would make a folder under .flox/pkgs/ a package
    set. A recipe carries its toolkit's pin, config and overlay names as data.
    """
    branch = catalog.branch(branch_name)
    return tuple(
        RenderedFile(
            path=_relative(layout.recipe_path(variant.name)),
            text=render_template(
                env, layout.template_of(variant), recipe_context(catalog, variant)
            ),
        )
        for variant in expand(catalog, branch.name)
    )


def recipe_count(files: Sequence[RenderedFile]) -> int:
    return sum(1 for f in files if "/" not in f.path)


def _relative(repo_path: str) -> str:
    """`.flox/pkgs/x.nix` -> `x.nix`: paths inside the output directory."""
    return repo_path.removeprefix(layout.PKGS_DIR + "/")
