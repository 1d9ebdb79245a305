"""`ci-tools.yaml`: what a build repository without `catalog.yaml` tells ci-tools beyond the
file names of its recipes. Optional, and small:

    org: acme                                   # the Flox organisation of install lines
    ignore: ["*.nix.backup", "*-wrapper.nix"]   # files under .flox/pkgs/ that are no recipes
    builds: [cu128]                             # more suffixes like -nightly and -magma
    min_driver: {cuda12_8: 570, cuda13_0: 580}  # per CUDA toolkit of the recipe names
    branches:                                   # the branches CI builds, for sync-workflows
      pytorch-2.10-python313:
        versions: {pytorch: "2.10.0", torchvision: "0.25.0"}   # what `ci-tools test` expects
        min_driver: 580                         # every toolkit of this branch (wins)

A fact none of these states is unknown, and every output says so in words.

Its shape is declared with the kinds of `shape.py` and `scalars.py`, like `tables.py` declares
catalog.yaml and runners.yaml, so the loader's checks, the JSON Schema and the key
reference come from the declaration below.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools.catalog import builtin, layout, nameparse
from ci_tools.catalog import grammar as g
from ci_tools.catalog.scalars import Int, Text, Version
from ci_tools.catalog.shape import Field, ListOf, MapOf, Record, Table
from ci_tools.catalog.yamlsrc import Problems, did_you_mean, load_yaml

VERSIONS = MapOf(Text(g.PACKAGE_NAME), Version(), "package names to versions", "package")
DRIVER = Int(1, 9999)
DRIVER_DOC = (
    "NVIDIA's table of CUDA toolkits and driver versions; `detect` compares the driver's major "
    "version"
)
BRANCH = Table(
    name="settings_branch",
    label="branch",
    fields=(
        Field(
            "versions",
            VERSIONS,
            "The upstream version of each package, which `ci-tools test` checks.",
            default_doc="none: versions are not checked, and say unknown",
        ),
        Field(
            "min_driver",
            DRIVER,
            "The lowest NVIDIA driver branch that runs every CUDA build of the branch, from "
            + DRIVER_DOC
            + ".",
            default_doc="the top-level `min_driver` of each toolkit",
        ),
    ),
)
SETTINGS = Table(
    name="settings",
    label="the settings",
    doc="What a build repository without catalog.yaml tells ci-tools beyond its file names.",
    fields=(
        Field(
            "org",
            Text(g.ORG),
            "The Flox organisation its variants are published to: `detect`, the page and the "
            "release notes print `flox install ORG/NAME`.",
            default_doc="none: install lines say `<org>`",
        ),
        Field(
            "ignore",
            ListOf(Text(g.GLOB)),
            "Files under .flox/pkgs/ that are not recipes (backups, helpers): fnmatch globs of "
            "their path there, or of its first folder.",
            default=(),
        ),
        Field(
            "builds",
            ListOf(Text(g.BUILD), unique=True),
            "Name suffixes that mark another build of the variant before them, besides "
            + " and ".join(nameparse.BUILD_SUFFIXES)
            + ".",
            default=(),
        ),
        Field(
            "min_driver",
            MapOf(Text(g.TOOLKIT), DRIVER, "toolkit names to driver branches", "toolkit"),
            "The lowest NVIDIA driver branch that runs the builds of each CUDA toolkit, named "
            "as the recipe names spell it (cuda12_8), from " + DRIVER_DOC + ".",
            default_doc="none: the driver a build needs is unknown, and says so",
        ),
        Field(
            "branches",
            MapOf(Text(g.BRANCH), BRANCH, "branch names to branches", "branch"),
            "The branches CI builds, which `sync-workflows` writes into the workflows.",
            default_doc="none",
        ),
    ),
)


@dataclass(frozen=True, kw_only=True)
class Settings:
    display_name: str | None = None  # None: the repository has no settings file
    org: str | None = None
    ignore: tuple[str, ...] = ()
    extra_builds: tuple[str, ...] = ()
    branches: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # -> versions
    min_driver: Mapping[str, int] = field(default_factory=dict)  # toolkit name -> branch
    branch_min_driver: Mapping[str, int] = field(default_factory=dict)  # branch -> driver

    def driver_of(self, branch: str, toolkit: str) -> int | None:
        """The least driver of `toolkit`'s builds on `branch`; None: unknown."""
        return self.branch_min_driver.get(branch, self.min_driver.get(toolkit))

    @property
    def builds(self) -> tuple[str, ...]:
        return (*nameparse.BUILD_SUFFIXES, *self.extra_builds)

    def ignores(self, path: str) -> bool:
        """Whether a file under .flox/pkgs/ (`path` relative to it) is no recipe."""
        top = path.split("/", 1)[0]
        return any(fnmatch.fnmatchcase(p, glob) for glob in self.ignore for p in (path, top))


def load_settings(root: Path) -> Settings:
    """The settings of the repository at `root`; none where it has no settings file."""
    path = root / layout.SETTINGS
    if not path.exists():
        return Settings()
    node = load_yaml(path, layout.SETTINGS)
    if node.value is None:
        return Settings(display_name=layout.SETTINGS)
    problems = Problems()
    record = SETTINGS.check_document(node, problems)
    branches = _branches(record["branches"], problems) if record is not None else {}
    problems.raise_if_any()
    assert record is not None
    return Settings(
        display_name=layout.SETTINGS,
        org=record["org"],
        ignore=tuple(glob for glob, _ in record["ignore"]),
        extra_builds=tuple(build for build, _ in record["builds"]),
        branches=branches,
        min_driver=dict(record["min_driver"].items()) if record["min_driver"] else {},
        branch_min_driver={
            name: entry["min_driver"]
            for name, entry in (record["branches"] or {}).items()
            if entry is not None and entry["min_driver"] is not None
        },
    )


def _branches(table: Record | None, problems: Problems) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for branch, entry in table.items() if table is not None else ():
        written: Record | None = entry["versions"] if entry is not None else None
        out[branch] = _versions(branch, written, problems) if written is not None else {}
    return out


def _versions(branch: str, written: Record, problems: Problems) -> dict[str, str]:
    versions: dict[str, str] = {}
    for package, version in written.items():
        if package not in builtin.PACKAGES:
            problems.add(
                written.node.file,
                written.key_line(package),
                f'{branch}.versions: unknown package "{package}"'
                f"{did_you_mean(package, tuple(builtin.PACKAGES))}; known: "
                + ", ".join(builtin.PACKAGES),
            )
        elif version is not None:
            versions[package] = version
    return versions
