"""Preflight of a self-hosted runner, before a build job starts: flox, Nix and free disk.

Reads the `preflight` section of the runner inventory (runners.yaml, checked like every other
key: file:line, exit 2): the least flox version (1.14 reads FLOX_FLOXHUB_TOKEN, which CI
publishing needs) and the free space a stack's build needs. Garbage-collection policy: when the
Nix store's disk is short, unreferenced store paths are collected (`nix-store --gc
--max-freed`, only as much as is missing; results still linked from a workspace and profiles
are GC roots and stay), then the space is measured again.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import proc
from ci_tools.catalog import tables
from ci_tools.catalog.yamlsrc import Problems, load_yaml

GIB = 1024**3
DEFAULT_FLOX = "1.14"
DEFAULT_MIN_FREE_GB = 60
DEFAULT_STORE = Path("/nix/store")


@dataclass(frozen=True, kw_only=True)
class Requirements:
    flox: str = DEFAULT_FLOX
    min_free_gb: int = DEFAULT_MIN_FREE_GB
    store: Path = DEFAULT_STORE


@dataclass(frozen=True, kw_only=True)
class Host:
    """What the check reads of the runner: swapped for doubles in tests."""

    which: Callable[[str], str | None] = shutil.which
    output: Callable[[list[str]], str] = lambda argv: proc.run(argv, timeout=60).stdout
    free: Callable[[Path], int] = lambda path: shutil.disk_usage(_existing(path)).free
    collect: Callable[[list[str]], object] = lambda argv: proc.run(argv, timeout=3600)


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def requirements(inventory: Path | None, shown: str, store: Path) -> Requirements:
    """The `preflight` section of `inventory` (validated), or the defaults without one."""
    if inventory is None:
        return Requirements(store=store)
    problems = Problems()
    record = tables.RUNNERS.check_document(load_yaml(inventory, shown), problems)
    problems.raise_if_any()
    section = record.get("preflight") if record is not None else None
    if section is None:
        return Requirements(store=store)
    flox, min_free_gb = section.get("flox"), section.get("min_free_gb")
    return Requirements(
        flox=DEFAULT_FLOX if flox is None else flox,
        min_free_gb=DEFAULT_MIN_FREE_GB if min_free_gb is None else min_free_gb,
        store=store,
    )


def version(text: str) -> tuple[int, ...] | None:
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return None if match is None else tuple(int(g or 0) for g in match.groups())


def check(need: Requirements, host: Host, say: Callable[[str], None]) -> list[str]:
    """Every problem of this runner, one sentence each; `say` tells of garbage collection."""
    problems = []
    flox = host.which("flox")
    if flox is None:
        problems.append(f"flox is not on PATH; this runner needs flox >= {need.flox}")
    else:
        found = host.output([flox, "--version"]).strip()
        have = version(found)
        if have is None or have < (version(need.flox) or ()):
            problems.append(f"flox {found or '(no version)'} is older than {need.flox}")
    nix_store = host.which("nix-store")
    if nix_store is None or host.which("nix") is None:
        problems.append("Nix is not on PATH (nix, nix-store); install Nix for the runner's user")
    wanted = need.min_free_gb * GIB
    free = host.free(need.store)
    if free < wanted and nix_store is not None:
        say(f"{free / GIB:.1f} GiB free under {need.store}; collecting Nix garbage")
        host.collect([nix_store, "--gc", "--max-freed", str(wanted - free)])
        free = host.free(need.store)
    if free < wanted:
        problems.append(
            f"{free / GIB:.1f} GiB free under {need.store}, a build needs {need.min_free_gb} GiB "
            "(runners.yaml preflight.min_free_gb); free space on the runner"
        )
    return problems
