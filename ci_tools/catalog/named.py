"""The catalog of a build repository that has none: one branch, whose variants are its recipes.

Every command but `generate` reads a `Catalog`; without `catalog.yaml` it is made here from
three sources, and nothing else:

* the recipes' file names (`nameparse.parse_name`, aliases and build suffixes included): each
  variant's package, Python, CUDA major.minor, SM, ISA, platform and stack;
* the built-in facts (`builtin`): each ISA's platform, flags and torch capability, each SM's
  compute capability, family and cuDNN switch, each package's import name and base;
* the optional settings file (`settings`): the org, the versions `ci-tools test` checks and
  the least NVIDIA driver of each toolkit.

What only a catalog states (nixpkgs pins, cudaPackages sets) stays empty: no command but
`generate` reads it. A version or driver the settings do not state is None: unknown, which
every output says in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ci_tools.catalog import builtin, layout
from ci_tools.catalog.model import Branch, Catalog, Gpu, Kind, Toolkit, version_key
from ci_tools.catalog.nameparse import ParsedName
from ci_tools.catalog.published import Published
from ci_tools.catalog.settings import Settings

# The path of a catalog made from recipe names (no file has it).
RECIPE_NAMES = "(recipe names)"


def is_named(catalog: Catalog) -> bool:
    """Whether `catalog` was made here (the repository has no catalog.yaml)."""
    return catalog.path.name == RECIPE_NAMES


def settings_file(catalog: Catalog) -> str:
    """Where a fact such as `org` is stated: the catalog, or ci-tools.yaml without one."""
    return layout.SETTINGS if is_named(catalog) else catalog.display_name


def catalog_from_names(
    parsed: Sequence[ParsedName], *, branch: str, settings: Settings, root: Path
) -> Catalog:
    """The catalog of `branch`, whose recipes are `parsed` (checked by plan.discovery)."""
    gpus: dict[str, Gpu] = dict(builtin.GPUS)
    for name in parsed:
        if name.sm is not None and name.sm not in gpus:
            gpus[name.sm] = builtin.gpu(name.sm)
    toolkits = _toolkits(parsed, branch, settings)
    pythons = sorted({n.python for n in parsed}, key=version_key) or ["3.13"]
    the_branch = Branch(
        name=branch,
        versions=dict(settings.branches.get(branch, {})),
        cuda=toolkits[0].cuda if toolkits else "",
        python=tuple(pythons),
        min_driver=toolkits[0].min_driver if toolkits else None,
        nixpkgs_rev="",
        nixpkgs_sha256=None,
        cuda_packages="",
        toolkits=toolkits,
        published=tuple(_published(n) for n in parsed),
    )
    return Catalog(
        path=root / RECIPE_NAMES,
        display_name=f"the recipes of branch {branch}",
        org=settings.org,
        packages=dict(builtin.PACKAGES),
        isas=dict(builtin.ISAS),
        gpus=gpus,
        branches={branch: the_branch},
    )


def _toolkits(parsed: Sequence[ParsedName], branch: str, settings: Settings) -> tuple[Toolkit, ...]:
    """One toolkit per CUDA the names carry, oldest first."""
    cudas = sorted({n.cuda for n in parsed if n.cuda is not None}, key=version_key)
    return tuple(
        Toolkit(
            name=_toolkit_name(cuda),
            cuda=cuda,
            cuda_packages="",
            nixpkgs_rev="",
            nixpkgs_sha256=None,
            min_driver=settings.driver_of(branch, _toolkit_name(cuda)),
        )
        for cuda in cudas
    )


def _toolkit_name(cuda: str) -> str:
    return "cuda" + cuda.replace(".", "_")


def _published(name: ParsedName) -> Published:
    return Published(
        name=name.name,
        package=name.package,
        python=name.python,
        kind=name.kind,
        toolkit=_toolkit_name(name.cuda) if name.kind is Kind.GPU and name.cuda else None,
        sm=name.sm,
        isa=name.isa,
    )
