"""Which packages `.flox/pkgs/` defines, named as flox's Nix expression builds (NEF) name them.

Ported from package-builder/nef/lib/dirToAttrs.nix and reflect.nix (`collectAttrPaths`):
* `<name>.nix` is package `<name>`; a folder with a `default.nix` is package `<folder>`;
* any other folder is a package SET: its entries are named `<folder>.<entry>` (`lib/x.nix` is
  `lib.x`), recursively; a folder with no package in it is dropped;
* files that do not end in `.nix`, and any name ending in `flake.nix`, are ignored;
* when `foo.nix` and a folder `foo/` both yield an entry, the folder wins: dirToAttrs means to
  prefer files, but its sort compares `type == "regular"` against values typed "nix" or
  "directory", so the comparison is always false and listToAttrs keeps the first entry of
  readDir's alphabetical order, which is `foo` before `foo.nix`.
Names are shown with lib.showAttrPath: a component that is not a Nix identifier is quoted.

flox lists these from the `.flox` folder itself (build.rs `get_nix_expression_targets`, a
`path:` reference: untracked files are listed); building or publishing one that git does not
track is refused (commands/build.rs `check_git_tracking_for_expression_builds`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

_IDENTIFIER = re.compile(r"[a-zA-Z_][a-zA-Z0-9_'-]*")


@dataclass(frozen=True, kw_only=True)
class Target:
    attr_path: tuple[str, ...]
    file: Path  # the expression flox calls: <name>.nix or <name>/default.nix

    @property
    def name(self) -> str:
        return ".".join(_show(part) for part in self.attr_path)


def _show(part: str) -> str:
    # nixpkgs lib.strings.escapeNixIdentifier, which lib.showAttrPath applies to each component
    return part if _IDENTIFIER.fullmatch(part) else json.dumps(part)


def targets(pkgs_dir: Path) -> list[Target]:
    found: list[Target] = []
    if pkgs_dir.is_dir() and not (pkgs_dir / "default.nix").is_file():
        _collect(pkgs_dir, (), found)
    elif (pkgs_dir / "default.nix").is_file():
        # dirToAttrs of a root with default.nix is a single nameless package; flox has no name
        # to build it by, so nothing is listed.
        pass
    return sorted(found, key=lambda t: t.name)


def _entry(path: Path) -> str | None:
    """dirToAttrs' `entry`: "nix", "directory" or None (ignored)."""
    if path.is_symlink():
        return None  # readFileType says "symlink": neither branch takes it
    if path.is_dir():
        if (path / "default.nix").is_file():
            return "nix"
        return "directory" if _has_package(path) else None
    if path.is_file() and path.name.endswith(".nix") and not path.name.endswith("flake.nix"):
        return "nix"
    return None


def _has_package(folder: Path) -> bool:
    return any(_entry(child) is not None for child in folder.iterdir())


def _collect(folder: Path, prefix: tuple[str, ...], out: list[Target]) -> None:
    chosen: dict[str, Path] = {}
    for child in sorted(folder.iterdir(), key=lambda p: p.name):
        if _entry(child) is None:
            continue
        name = child.name.removesuffix(".nix")
        chosen.setdefault(name, child)  # listToAttrs keeps the first: see the module docstring
    for name, child in chosen.items():
        if _entry(child) == "directory":
            _collect(child, (*prefix, name), out)
        else:
            file = child / "default.nix" if child.is_dir() else child
            out.append(Target(attr_path=(*prefix, name), file=file))
