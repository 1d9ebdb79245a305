"""`ci-tools.yaml`: what a build repository without `catalog.yaml` tells ci-tools beyond the
file names of its recipes. Optional, and small:

    ignore: ["*.nix.backup", "*-wrapper.nix"]   # files under .flox/pkgs/ that are no recipes
    builds: [cu128]                             # more suffixes like -nightly and -magma
    branches:                                   # the branches CI builds, for sync-workflows
      pytorch-2.10-python313:
        versions: {pytorch: "2.10.0", torchvision: "0.25.0"}   # what `ci-tools test` expects

Its shape is declared with the kinds of `shape.py` and `scalars.py`, like `tables.py` declares
catalog.yaml and runners.yaml, so the loader's checks, the JSON Schema and the key
reference come from the declaration below.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools.catalog import builtin, layout, names
from ci_tools.catalog import grammar as g
from ci_tools.catalog.scalars import Text, Version
from ci_tools.catalog.shape import Field, ListOf, MapOf, Record, Table
from ci_tools.catalog.yamlsrc import Problems, did_you_mean, load_yaml

VERSIONS = MapOf(Text(g.PACKAGE_NAME), Version(), "package names to versions", "package")
BRANCH = Table(
    name="settings_branch",
    label="branch",
    fields=(
        Field(
            "versions",
            VERSIONS,
            "The upstream version of each package, which `ci-tools test` checks.",
            default_doc="none: versions are not checked",
        ),
    ),
)
SETTINGS = Table(
    name="settings",
    label="the settings",
    doc="What a build repository without catalog.yaml tells ci-tools beyond its file names.",
    fields=(
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
            + " and ".join(names.BUILD_SUFFIXES)
            + ".",
            default=(),
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
    ignore: tuple[str, ...] = ()
    extra_builds: tuple[str, ...] = ()
    branches: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # -> versions

    @property
    def builds(self) -> tuple[str, ...]:
        return (*names.BUILD_SUFFIXES, *self.extra_builds)

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
        ignore=tuple(glob for glob, _ in record["ignore"]),
        extra_builds=tuple(build for build, _ in record["builds"]),
        branches=branches,
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
