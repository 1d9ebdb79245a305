"""A real Nix store of the test's own (Debian's nix-bin): NIX_STORE_DIR and friends under a
temporary folder, no daemon, no root, no network."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

needs_nix = pytest.mark.skipif(
    shutil.which("nix-store") is None or shutil.which("nix") is None, reason="needs nix-bin"
)


def store_env(root: Path) -> dict[str, str]:
    etc = root / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "nix.conf").write_text(
        "sandbox = false\nsubstituters =\nbuild-users-group =\n", encoding="utf-8"
    )
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "NIX_STORE_DIR": str(root / "store"),
        "NIX_STATE_DIR": str(root / "var"),
        "NIX_LOG_DIR": str(root / "log"),
        "NIX_CONF_DIR": str(etc),
        "NIX_REMOTE": "",
    }


def add(env: dict[str, str], tree: Path) -> str:
    """`nix-store --add TREE`: its store path."""
    done = subprocess.run(
        ["nix-store", "--add", str(tree)], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def payload(folder: Path, name: str, files: dict[str, str]) -> Path:
    tree = folder / name
    for relative, text in files.items():
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_text(text, encoding="utf-8")
    return tree


def tamper(path: str, relative: str, text: str) -> None:
    """Change a file of a registered store path behind the store's back."""
    target = Path(path) / relative
    Path(path).chmod(0o755)
    target.parent.chmod(0o755)
    target.chmod(0o644)
    target.write_text(text, encoding="utf-8")


# A closure of three paths, versions in their names, the top referring to both others.
CLOSURE = """
let
  sh = "/bin/sh";
  lib = derivation { name = "libfoo-1.2.3"; system = builtins.currentSystem; builder = sh;
                     args = [ "-c" "echo library > $out" ]; };
  py = derivation { name = "python3-3.13.1"; system = builtins.currentSystem; builder = sh;
                    args = [ "-c" "echo ${lib} > $out" ]; };
in derivation { name = "python3.13-torch-2.9.1"; system = builtins.currentSystem; builder = sh;
                args = [ "-c" "echo ${py} ${lib} > $out" ]; }
"""


def build_closure(env: dict[str, str], folder: Path) -> str:
    """Build CLOSURE with the real Nix in the store of `env`: the top store path."""
    recipe = folder / "closure.nix"
    recipe.write_text(CLOSURE, encoding="utf-8")
    drv = subprocess.run(
        ["nix-instantiate", str(recipe)], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    return subprocess.run(
        ["nix-store", "--realise", drv], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
