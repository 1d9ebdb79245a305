"""The real `nix-instantiate` behind a wrapper script: it logs each call's arguments, and
may refuse the dummy store as a Nix without one would."""

from __future__ import annotations

import shutil
from pathlib import Path

# Nix 2.8's words for a store it does not know (`nix-instantiate --store bogus:// --parse`).
NO_DUMMY_STORE = "error: don't know how to open Nix store 'dummy://'"


def nix_wrapper(folder: Path, log: Path, *, refuse_dummy_store: bool = False) -> Path:
    """`folder/nix-instantiate`, which appends its arguments to `log` and runs the real
    one; put `folder` first on PATH."""
    real = shutil.which("nix-instantiate")
    assert real is not None
    folder.mkdir(exist_ok=True)
    refuse = (
        f'case " $* " in *" dummy:// "*) echo "{NO_DUMMY_STORE}" >&2; exit 1;; esac\n'
        if refuse_dummy_store
        else ""
    )
    wrapper = folder / "nix-instantiate"
    wrapper.write_text(
        f'#!/bin/sh\necho "$*" >> {log}\n{refuse}exec {real} "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(0o755)
    log.touch()
    return wrapper
