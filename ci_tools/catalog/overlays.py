"""The overlays a catalog names: each is nix/overlays/NAME.nix, and parses.

Every catalog load checks them (`ci-tools matrix` too), so the files are parsed with one
`nix-instantiate --parse` for all of them, and once per process for a set of file versions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from ci_tools.catalog import layout
from ci_tools.catalog.model import Catalog
from ci_tools.catalog.yamlsrc import Problems, did_you_mean

OVERLAYS_DIR = layout.OVERLAYS_DIR


def repository_root(folder: Path) -> Path | None:
    """The folder whose nix/overlays/ a catalog's overlay names refer to: the catalog's own,
    or the nearest above it that has one (a test catalog kept under tests/data/). None for a
    catalog outside any build repository (a copy on its own): only the names are checked."""
    for candidate in (folder, *folder.parents):
        if (candidate / OVERLAYS_DIR).is_dir():
            return candidate
    return None


def check_overlays(catalog: Catalog, root: Path, problems: Problems) -> None:
    """Every overlay a branch or toolkit names is nix/overlays/NAME.nix under `root`, and
    parses (`nix-instantiate --parse`, where Nix is installed). Reported at the catalog line."""
    folder = root / OVERLAYS_DIR
    known = {p.stem for p in folder.glob("*.nix")} if folder.is_dir() else set()
    named: list[tuple[str, int]] = []
    for branch in catalog.branches.values():
        named.extend(zip(branch.overlays, branch.overlay_lines, strict=True))
        for toolkit in branch.toolkits:
            named.extend(zip(toolkit.overlays, toolkit.overlay_lines, strict=True))
    used = sorted({name for name, _ in named if name in known})
    errors = parse_errors([folder / f"{name}.nix" for name in used])
    for name, line in named:
        if name not in known:
            problems.add(
                catalog.display_name,
                line,
                f'unknown overlay "{name}": no {OVERLAYS_DIR}/{name}.nix'
                f"{did_you_mean(name, known)}; known: {', '.join(sorted(known)) or 'none'}",
            )
        elif errors.get(name) is not None:
            problems.add(
                catalog.display_name,
                line,
                f"overlay {name} ({OVERLAYS_DIR}/{name}.nix) does not parse: {errors[name]}",
            )


def parse_errors(paths: Sequence[Path]) -> dict[str, str]:
    """nix-instantiate --parse's complaint about each file that does not parse, by file stem;
    empty when all parse or Nix is not installed. One call for all of them: a second, one
    call per file, only when something does not parse (Nix stops at the first error)."""
    if not paths:
        return {}
    versions = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    return dict(_parse_errors_cached(versions))


@functools.lru_cache(maxsize=64)
def _parse_errors_cached(versions: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, str], ...]:
    """One parse per set of file versions and process: every catalog load checks them."""
    from ci_tools.base import proc

    if proc.which("nix-instantiate") is None:
        return ()
    files = [path for path, _, _ in versions]
    if proc.run(["nix-instantiate", "--parse", *files], timeout=60).ok:
        return ()
    out = []
    for path in files:
        result = proc.run(["nix-instantiate", "--parse", path], timeout=60)
        if not result.ok:
            lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
            # "error: syntax error, unexpected ';'" and the "at FILE:LINE:COLUMN:" that follows.
            out.append((Path(path).stem, " ".join(lines[:2]) or f"exit {result.returncode}"))
    return tuple(out)
