"""Finding a Nix-built package's interpreter in its closure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.build.smoke import closure

HASH = "0123456789abcdfghijklmnpqrsvwxyz"  # 32 characters of Nix's base32 alphabet


def _store_path(store: Path, name: str, site: str | None = None) -> Path:
    path = store / f"{HASH}-{name}"
    path.mkdir(parents=True)
    if site is not None:
        (path / site).mkdir(parents=True)
    return path


def test_closure_python_with_every_site_packages_result_first(tmp_path: Path) -> None:
    store = tmp_path / "store"
    site = "lib/python3.13/site-packages"
    python = _store_path(store, "python3-3.13.5")
    (python / "bin").mkdir()
    (python / "bin" / "python3").write_text("", encoding="utf-8")
    numpy = _store_path(store, "python3.13-numpy-2.3.1", site)
    torch = _store_path(store, "pytorch-python313-cpu-avx2", site)
    other = _store_path(store, "openblas-0.3.29")
    _store_path(store.parent / "other", "python3-3.12.9")  # not in the closure

    launch = closure.launch_from_closure(torch, [python, numpy, other, torch], "3.13")

    assert launch.python == str(python / "bin" / "python3")
    assert launch.env["PYTHONPATH"].split(os.pathsep) == [str(torch / site), str(numpy / site)]


def test_closure_without_the_branch_python_is_a_broken_build(tmp_path: Path) -> None:
    store = tmp_path / "store"
    python = _store_path(store, "python3-3.12.9")
    (python / "bin").mkdir()
    (python / "bin" / "python3").write_text("", encoding="utf-8")
    result = _store_path(store, "pytorch-python313-cpu-avx2", "lib/python3.13/site-packages")
    with pytest.raises(closure.NoInterpreterError, match=r"holds no Python 3\.13 interpreter"):
        closure.launch_from_closure(result, [python, result], "3.13")


@pytest.mark.skipif(shutil.which("nix-store") is None, reason="needs nix-store (Debian nix-bin)")
def test_closure_is_read_with_the_real_nix_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A private store (NIX_REMOTE): the real nix-store, without touching /nix.
    monkeypatch.setenv("NIX_REMOTE", f"local?root={tmp_path / 'root'}")
    payload = tmp_path / "payload"
    payload.write_text("torch\n", encoding="utf-8")
    added = subprocess.run(
        ["nix-store", "--add", str(payload)], capture_output=True, text=True, check=True
    ).stdout.strip()
    link = tmp_path / "result-x"
    link.symlink_to(added)
    assert closure.closure_of(link) == [Path(added)]


def test_a_result_with_its_own_interpreter_needs_no_nix(tmp_path: Path) -> None:
    python = tmp_path / "result-x" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    launch = closure.interpreter_in(tmp_path / "result-x", "x", "3.13")
    assert launch == closure.Launch(python=str(python))
