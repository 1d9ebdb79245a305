"""Starting the interpreter of a Nix-built Python package.

`flox build pytorch-…` leaves `result-pytorch-…`: the package's store path, holding
lib/pythonX.Y/site-packages and no interpreter. Its runtime closure holds the Python it was
built for and every propagated dependency (numpy, typing-extensions, the sibling torch of a
TorchVision build), so the checks run under that Python with the closure's site-packages on
PYTHONPATH: what `python.withPackages` would assemble, without building anything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools.base import proc
from ci_tools.base.errors import InputError


@dataclass(frozen=True, kw_only=True)
class Launch:
    """How to start the variant's interpreter: the executable and the variables it needs."""

    python: str
    env: Mapping[str, str] = field(default_factory=dict)


def interpreter_in(result_dir: Path, variant: str, python_version: str) -> Launch:
    """The interpreter of a build result (`./result-VARIANT` by default)."""
    if not result_dir.exists():
        raise InputError(
            f"{result_dir}: no such build result; build it first (ci-tools build {variant}) "
            "or name the interpreter with --python PATH"
        )
    for name in ("python3", "python"):
        candidate = result_dir / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return Launch(python=str(candidate))
    if proc.which("nix-store") is None:
        raise InputError(
            f"{result_dir} holds no bin/python3, and `nix-store` is not on PATH to find the "
            "Python in its closure; pass an interpreter that has this build on its path "
            "with --python PATH"
        )
    return launch_from_closure(result_dir, closure_of(result_dir), python_version)


def closure_of(result_dir: Path) -> list[Path]:
    """The runtime closure of a build result, as `nix-store --query --requisites` lists it."""
    target = result_dir.resolve()
    result = proc.run(["nix-store", "--query", "--requisites", str(target)], timeout=120)
    if not result.ok:
        raise InputError(
            f"nix-store cannot list the closure of {target}: "
            f"{(result.stderr or result.stdout).strip() or 'no output'}; "
            "pass an interpreter with --python PATH"
        )
    return [Path(line) for line in result.stdout.splitlines() if line.strip()]


class NoInterpreterError(InputError):
    """A build result whose runtime closure holds no Python to run it: a broken build (its
    test fails and is recorded), not a mistake in the command line."""


def launch_from_closure(result_dir: Path, closure: Sequence[Path], python_version: str) -> Launch:
    """The closure's Python `python_version` ("3.13"), with every site-packages of the closure
    on PYTHONPATH, the result's own first."""
    interpreter = _interpreter(closure, python_version)
    if interpreter is None:
        raise NoInterpreterError(
            f"the closure of {result_dir} holds no Python {python_version} interpreter; "
            "pass one that has this build on its path with --python PATH"
        )
    site = f"lib/python{python_version}/site-packages"
    own = result_dir.resolve()
    ordered = [own, *(p for p in closure if p != own)]
    paths = [str(p / site) for p in ordered if (p / site).is_dir()]
    return Launch(python=str(interpreter), env={"PYTHONPATH": os.pathsep.join(paths)})


def _interpreter(closure: Sequence[Path], python_version: str) -> Path | None:
    # nixpkgs names CPython's store path `<hash>-python3-3.13.5`; the `-env` and package
    # paths (`python3.13-numpy-…`) do not match.
    name = re.compile(rf"[0-9a-z]{{32}}-python3-{re.escape(python_version)}(\.\d+)*")
    for path in closure:
        if name.fullmatch(path.name):
            candidate = path / "bin" / "python3"
            if candidate.is_file():
                return candidate
    return None
