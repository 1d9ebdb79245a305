"""Running ci-tools on fuzzed input and checking the invariants of issue 12.

Invariants (each an assertion in `check_run`):
  I1 exit code in {0, 1, 2}; 2 for bad input
  I2 no traceback
  I3 every input error names file:line (or the argument)
  I4 on exit != 0 the output folder is byte-for-byte unchanged
  I5 on exit 0 every rendered file parses (`nix-instantiate --parse`)
  I6 on exit 0 no payload runs when the rendered shell snippets run
  I7 nothing written outside the output folder
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import traceback
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import cli

from .mutations import MARKER

REPO_ROOT = Path(__file__).resolve().parents[2]
MOCK = REPO_ROOT / "tests" / "nix" / "mock-nixpkgs.nix"
DOUBLE_FETCH = REPO_ROOT / "tests" / "nix" / "nixpkgs-double" / "fetch.nix"
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", re.ASCII)
FILE_LINE = re.compile(r"(catalog|runners)\.yaml:\d+: ")


@dataclass(frozen=True, kw_only=True)
class Run:
    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    crash: str | None  # the traceback of an exception that escaped main()


def run_inprocess(argv: Sequence[str], cwd: Path) -> Run:
    """`ci-tools ARGV` in this interpreter (fast); an escaped exception is a crash."""
    out, err = io.StringIO(), io.StringIO()
    crash = None
    code = -1
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            except BaseException:
                crash = traceback.format_exc()
    finally:
        os.chdir(previous)
    return Run(
        argv=tuple(argv), code=code, stdout=out.getvalue(), stderr=err.getvalue(), crash=crash
    )


def run_subprocess(
    argv: Sequence[str], cwd: Path, home: Path, env: Mapping[str, str] | None = None
) -> Run:
    """`ci-tools ARGV` as its own process, as a user runs it; `env` adds to (or replaces
    entries of) its small environment."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(REPO_ROOT),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        **(env or {}),
    }
    done = subprocess.run(
        [sys.executable, "-m", "ci_tools", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=120,
        check=False,
    )
    crash = done.stderr if "Traceback (most recent call last)" in done.stderr else None
    return Run(
        argv=tuple(argv), code=done.returncode, stdout=done.stdout, stderr=done.stderr, crash=crash
    )


def snapshot(root: Path, skip: Iterable[Path] = ()) -> dict[str, bytes]:
    """Every file under `root` (symlinks not followed) with its bytes; folders too."""
    skipped = {p.resolve() for p in skip}
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if any(path == s or s in path.parents for s in skipped):
            continue
        key = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[key] = b"->" + str(path.readlink()).encode()
        elif path.is_dir():
            out[key + "/"] = b""
        else:
            out[key] = path.read_bytes()
    return out


@dataclass
class Tally:
    """What the suite saw, for the report: cases, exit codes, invariants checked."""

    cases: int = 0
    runs: int = 0
    exit_codes: Counter[str] = field(default_factory=Counter)
    invariants: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(self.exit_codes.items()))
        held = ", ".join(f"{k} x{v}" for k, v in sorted(self.invariants.items()))
        return f"{self.cases} cases, {self.runs} runs; exit codes {{{codes}}}; held: {held}"


def check_run(
    run: Run,
    *,
    label: str,
    tally: Tally,
    bad_input: bool | None,
    allowed: frozenset[int] = frozenset({0, 1, 2}),
    file_line: bool = True,
) -> None:
    """I1-I3 for one run. `bad_input`: True when it must exit 2, None when unknown."""
    where = f"[{label}] ci-tools {' '.join(run.argv)[:200]}"
    tally.runs += 1
    command = run.argv[0] + (" --check" if "--check" in run.argv else "")
    tally.exit_codes[f"{command}={run.code}"] += 1
    assert run.crash is None, f"{where}: crashed\n{run.crash}"
    assert "Traceback (most recent call last)" not in run.stderr, f"{where}:\n{run.stderr}"
    tally.invariants["I2 no traceback"] += 1
    assert run.code in allowed, f"{where}: exit {run.code}\n{run.stderr[-2000:]}"
    if bad_input is True:
        assert run.code == 2, f"{where}: bad input must exit 2, got {run.code}"
    tally.invariants["I1 exit code"] += 1
    if run.code == 2 and file_line:
        assert FILE_LINE.search(run.stderr) or re.search(r"error: argument |--\w", run.stderr), (
            f"{where}: exit 2 without file:line:\n{run.stderr[-2000:]}"
        )
        tally.invariants["I3 file:line"] += 1


def check_unchanged(before: Mapping[str, bytes], after: Mapping[str, bytes], what: str) -> None:
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"{what} changed: {changed[:10]}"


# --- the rendered recipes under Nix and bash ------------------------------------------------


def nix_env(state: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(state),
        "NIX_STATE_DIR": str(state / "state"),
        "NIX_LOG_DIR": str(state / "log"),
        "NIX_CONF_DIR": str(state / "conf"),
        "NIX_REMOTE": "",
        "XDG_CACHE_HOME": str(state / "cache"),
    }


CHUNK = 100  # files per nix-instantiate call: an argument list has a size limit


def nix_parse(files: Sequence[Path], state: Path) -> None:
    """I5: every file parses (one nix-instantiate per CHUNK files)."""
    for start in range(0, len(files), CHUNK):
        _nix_parse(files[start : start + CHUNK], state)


def _nix_parse(files: Sequence[Path], state: Path) -> None:
    done = subprocess.run(
        [shutil.which("nix-instantiate") or "nix-instantiate", "--parse", *map(str, files)],
        env=nix_env(state),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _call(recipe: Path) -> str:
    """The recipe applied to the nixpkgs stand-in of this checkout, whichever door it has."""
    double = f"import {DOUBLE_FETCH}" if DOUBLE_FETCH.exists() else "null"
    return (
        f"(let f = import {recipe}; a = builtins.functionArgs f; in "
        f"if a ? fetchPinnedNixpkgs then f {{ fetchPinnedNixpkgs = {double}; }} "
        f"else f {{ pinnedPkgs = import {MOCK} {{ }}; }})"
    )


def as_checkout(recipes: Sequence[Path], root: Path) -> list[Path]:
    """Copies of `recipes` laid out as in a checkout (ROOT/.flox/pkgs), with the shared Nix
    they import (../../nix/) linked from this one."""
    pkgs = root / ".flox" / "pkgs"
    pkgs.mkdir(parents=True, exist_ok=True)
    if not (root / "nix").exists():
        (root / "nix").symlink_to(REPO_ROOT / "nix")
    out = []
    for recipe in recipes:
        shutil.copy(recipe, pkgs / recipe.name)
        out.append(pkgs / recipe.name)
    return out


SHELL_ATTRIBUTES = ("preConfigure", "preBuild", "postPatch", "postFixup", "postInstall")


def shell_snippets(recipes: Sequence[Path], state: Path) -> dict[str, str]:
    """Each recipe's shell hooks, as Nix renders them (one evaluation per CHUNK recipes)."""
    out: dict[str, str] = {}
    for start in range(0, len(recipes), CHUNK // 4):
        out.update(_shell_snippets(recipes[start : start + CHUNK // 4], state))
    return out


def _shell_snippets(recipes: Sequence[Path], state: Path) -> dict[str, str]:
    names = " ".join(f'"{name}"' for name in SHELL_ATTRIBUTES)
    entries = []
    for recipe in recipes:
        hooks = f'builtins.concatStringsSep "\\n" (map (n: r.${{n}} or "") [ {names} ])'
        entries.append(f'"{recipe}" = let r = {_call(recipe)}; in {hooks};')
    body = " ".join(entries)
    done = subprocess.run(
        [
            shutil.which("nix-instantiate") or "nix-instantiate",
            "--eval",
            "--strict",
            "--json",
            "-E",
            f"{{ {body} }}",
        ],
        env=nix_env(state),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, str] = json.loads(done.stdout)
    return result


def run_snippets(snippets: Mapping[str, str], scratch: Path) -> None:
    """I6: run each snippet with bash in an empty folder; the payload's marker never appears."""
    for recipe, snippet in snippets.items():
        folder = scratch / f"run-{abs(hash(recipe))}"
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["bash", "-c", snippet],
            cwd=folder,
            env={"PATH": "/usr/bin:/bin", "NIX_BUILD_CORES": "2", "HOME": str(folder)},
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert not (folder / MARKER).exists(), f"{recipe}: a payload ran:\n{snippet}"
        shutil.rmtree(folder)
