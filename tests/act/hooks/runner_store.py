"""Separate runners' Nix stores under act, where every job runs on this one host (act limit 8).

With ACT_JOB_STORES='{"JOB": "DIR", ...}', the Nix and flox commands of a job whose
GITHUB_JOB is JOB see the store database, logs and nix.conf under DIR, at the same store
directory: what another machine's /nix/store is. A path is valid there only once built there
or copied there, and Nix replaces whatever files an invalid path left on disk when it adds
the path (LocalStore::addToStore deletes them first), so what a test leg runs is what the
binary cache gave it. Jobs not named keep the scenario's store (the builders').
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

HOOKS = Path(__file__).resolve().parent
# What tests/act/harness.py writes for the scenario's own store, and the flox double for its.
NIX_CONF = "sandbox = false\nsubstituters =\nbuild-users-group =\n"


def environment(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    stores = json.loads(environ.get("ACT_JOB_STORES") or "{}")
    root = stores.get(environ.get("GITHUB_JOB", ""))
    if root is None:
        return env
    state = Path(root)
    (state / "etc").mkdir(parents=True, exist_ok=True)
    conf = state / "etc" / "nix.conf"
    if not conf.exists():
        conf.write_text(NIX_CONF, encoding="utf-8")
    env.update(
        NIX_STATE_DIR=str(state / "var"),
        NIX_LOG_DIR=str(state / "log"),
        NIX_CONF_DIR=str(state / "etc"),
        FLOX_DOUBLE_STORE_STATE=str(state),
    )
    return env


def exec_next(program: str, argv: list[str], env: Mapping[str, str]) -> None:
    """Run the next PROGRAM on PATH after the hooks, in place of this process."""
    rest = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != HOOKS
    )
    found = shutil.which(program, path=rest)
    if found is None:
        sys.exit(f"{program} hook: no {program} after the hooks on PATH")
    os.execve(found, [found, *argv], dict(env))  # noqa: S606 (a hook becomes the program)
