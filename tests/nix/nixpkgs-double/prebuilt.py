"""Describe this interpreter and its installed torch for the nixpkgs double's prebuilt knob.

Run it with the interpreter to describe: `python3.11 prebuilt.py OUT.json`. The double
(top-level.nix, `NIXPKGS_DOUBLE_PREBUILT=OUT.json`) then realises `python3XX` (XX this
interpreter's minor version) as a wrapper that runs this interpreter with `-S`, so that only
what the closure puts on PYTHONPATH is importable, and it realises a Python package whose final
`pname` and `version` equal an installed distribution's as that distribution, its runtime
requirements included. This stands for a binary cache that already holds the build: no
compiler runs, and anything whose version differs stays a placeholder.

Each package lists the top-level entries of its site-packages, read from the RECORD files of
the distribution and of every requirement that applies to this interpreter. A version's local
label ("2.13.0+cpu") is dropped from `version` and kept in `local`.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("torch", "torchvision", "torchaudio")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str | None:
    """The distribution a Requires-Dist line names, or None where its marker excludes this
    interpreter (markers are evaluated for the running one) or it asks for an extra."""
    name, _, marker = requirement.partition(";")
    if marker.strip() and not _marker_holds(marker):
        return None
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name)
    return _canonical(match.group(1)) if match else None


def _marker_holds(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:
        # Without `packaging`, only the `extra` clauses are understood: they exclude.
        return "extra" not in marker
    return bool(Marker(marker).evaluate({"extra": ""}))


def _entries(dist: metadata.Distribution) -> set[str]:
    tops = set()
    for file in dist.files or ():
        first = file.parts[0]
        if first in ("..", "__pycache__") or first.endswith(".pth"):
            continue
        tops.add(str(dist.locate_file(first)))
    return tops


def _closure(name: str) -> list[str] | None:
    try:
        root = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    entries: set[str] = set()
    seen: set[str] = set()
    pending = [root]
    while pending:
        dist = pending.pop()
        key = _canonical(dist.metadata["Name"])
        if key in seen:
            continue
        seen.add(key)
        entries |= _entries(dist)
        for requirement in dist.requires or ():
            needed = _requirement_name(requirement)
            if needed is None or needed in seen:
                continue
            try:
                pending.append(metadata.distribution(needed))
            except metadata.PackageNotFoundError:
                continue  # an optional part the wheel tolerates missing, as pip left it
    return sorted(entries)


def describe() -> dict[str, object]:
    packages: dict[str, object] = {}
    for name in PACKAGES:
        entries = _closure(name)
        if entries is None:
            continue
        public, _, local = metadata.version(name).partition("+")
        packages[name] = {"version": public, "local": local, "paths": entries}
    return {
        "python": {
            "minor": f"{sys.version_info.major}.{sys.version_info.minor}",
            "version": sys.version.split()[0],
            "executable": str(Path(sys.executable).resolve()),
        },
        "packages": packages,
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 prebuilt.py OUT.json")
    Path(sys.argv[1]).write_text(json.dumps(describe(), indent=2) + "\n", encoding="utf-8")
