"""Instantiating a recipe with the real nix-instantiate and realising it in a private store.

The store is private (NIX_STORE_DIR and friends under FLOX_DOUBLE_STORE, `sandbox = false`,
no substituters), so it needs no daemon, no root and no network; store paths are therefore
`<FLOX_DOUBLE_STORE>/store/<hash>-<name>`, not `/nix/store/...`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from flox_double import git
from flox_double.errors import FloxError

CALL_RECIPE = Path(__file__).resolve().parent / "call-recipe.nix"

# flox's own nixpkgs: the `nixpkgs` input of flox's flake.lock at 6536dac (COMMON_NIXPKGS_URL,
# providers/build.rs:47). Tests point it at a revision their nixpkgs double serves.
FLOX_NIXPKGS_REV = "46db2e09e1d3f113a13c0d7b81e2f221c63b8ce9"


class BuildFailed(Exception):
    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def store_env(environ: Mapping[str, str], root: Path) -> dict[str, str]:
    """The Nix environment of the store under `root`. With FLOX_DOUBLE_STORE_STATE, the
    database, logs and nix.conf are there instead: another machine's store at the same store
    directory (what a second runner's /nix/store is), valid only for what it built or was
    given."""
    state = Path(environ.get("FLOX_DOUBLE_STORE_STATE") or root)
    conf = state / "etc"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "nix.conf").write_text(
        "sandbox = false\nsubstituters =\nbuild-users-group =\n", encoding="utf-8"
    )
    return {
        **environ,
        "NIX_STORE_DIR": str(root / "store"),
        "NIX_STATE_DIR": str(state / "var"),
        "NIX_LOG_DIR": str(state / "log"),
        "NIX_CONF_DIR": str(conf),
        "NIX_REMOTE": "",
    }


def snapshot(repo: Path, into: Path) -> None:
    """What NEF's git+file reference gives the build: the tracked files only (their working-tree
    content: Nix's git fetcher reads a dirty tree's tracked files as they are)."""
    for name in git.tracked_files(repo):
        source = repo / name
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        elif source.is_file():
            shutil.copy2(source, target)


def fetch_double(repo: Path, environ: Mapping[str, str]) -> Path:
    configured = environ.get("FLOX_DOUBLE_FETCH")
    path = Path(configured) if configured else repo / "tests/nix/nixpkgs-double/fetch.nix"
    if not path.is_file():
        raise FloxError(
            f"flox double: no nixpkgs double at {path} (set FLOX_DOUBLE_FETCH to a fetch.nix)"
        )
    return path.resolve()


def instantiate(
    *, snapshot_root: Path, recipe: Path, attr_path: str, fetch: Path, env: Mapping[str, str]
) -> str:
    rev = env.get("FLOX_DOUBLE_NIXPKGS_REV", FLOX_NIXPKGS_REV)
    argv = [
        "nix-instantiate",
        str(CALL_RECIPE),
        *("--argstr", "recipe", str(snapshot_root / recipe)),
        *("--argstr", "attrPath", attr_path),
        *("--argstr", "floxNixpkgsRev", rev),
        *("--arg", "fetchPinnedNixpkgs", f"import {_nix_path(fetch)}"),
    ]
    done = subprocess.run(
        argv,
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise BuildFailed(done.stderr)
    lines = done.stdout.split()
    if len(lines) != 1:
        raise BuildFailed(
            f"error: '{attr_path}' does not evaluate to one derivation:\n{done.stdout}{done.stderr}"
        )
    return lines[0]


def realise(drv: str, link: Path, env: Mapping[str, str]) -> str:
    if link.is_symlink():
        link.unlink()
    done = subprocess.run(
        ["nix-store", "--realise", f"{drv}!out", "--add-root", str(link), "--indirect"],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if done.returncode != 0:
        raise BuildFailed(done.stderr)
    return str(link.readlink())


def _nix_path(path: Path) -> str:
    text = str(path)
    if not all(c.isalnum() or c in "/._-+" for c in text):
        raise FloxError(f"flox double: cannot pass {text!r} to Nix as a path literal")
    return text


def temporary_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="flox-double-")
