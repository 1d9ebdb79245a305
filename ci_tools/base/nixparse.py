"""How ci-tools asks Nix to parse files: `nix-instantiate --parse`, without a Nix store.

A parse reads files and prints them; it needs no store. But Nix opens its store before it
reads anything: the local store's database, about 7 ms of each start where this user may
write it; where this user may not, it fails. Debian 12's nix-bin (Nix 2.8) without a
daemon, for any user but root: "error: getting status of
/nix/var/nix/daemon-socket/socket: Permission denied". Every overlay then read as
unparsable (each catalog load failed, exit 2), and every fingerprint as raw bytes.

`--store dummy://` names the store that holds nothing (NixOS/nix,
src/libstore/dummy-store.cc: "useful when you want to use the Nix evaluator when no actual
Nix store exists"); Nix 2.8 (Debian's) has it, and prints the same parse with it. A Nix
that had none would say it cannot open that store: the parse is then asked again without
it, and no later call of this process asks for it (`run`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ci_tools.base.proc import CommandResult, Running

PARSER = "nix-instantiate"
NO_STORE = ("--store", "dummy://")
# Nix's answer when it has no such store: "don't know how to open Nix store 'dummy://'"
# (Nix 2.8), "... with scheme 'dummy'" (later wordings). Read from its first error line only:
# under a syntax error's message Nix 2.8 echoes the refused line of the file, whose text
# may hold these words.
_NO_SUCH_STORE = re.compile(r"open Nix store\b.*\bdummy\b")

# Whether this process's Nix opens `NO_STORE`; False once it said it cannot.
_store = {"dummy": True}


def argv(paths: Sequence[str], *, store: bool = True) -> list[str]:
    """The command that parses `paths` (after `--`: a path never reads as an option)."""
    return [PARSER, *(NO_STORE if store else ()), "--parse", "--", *paths]


def background_argv(paths: Sequence[str]) -> list[str]:
    """`argv` for a parse whose exit status alone is read (`catalog.overlays`): a Nix
    without the dummy store fails it, and the caller's `run` then asks again."""
    return argv(paths, store=_store["dummy"])


def refused_store(stderr: str) -> bool:
    first = next((line for line in stderr.splitlines() if line.startswith("error:")), "")
    return _NO_SUCH_STORE.search(first) is not None


def run(paths: Sequence[str], *, cwd: Path | None = None, timeout: float) -> CommandResult:
    """Parse `paths` (one line of output a file, in order; Nix stops at the first it
    refuses); without the dummy store where this Nix has none."""
    from ci_tools.base import proc  # here: the overlays' first look starts Nix without it

    result = proc.run(argv(paths, store=_store["dummy"]), cwd=cwd, timeout=timeout)
    return answer(result, cwd=cwd, timeout=timeout)


def start(paths: Sequence[str], *, cwd: Path, timeout: float) -> Running:
    """`run`, started now: its answer is `answer(started.result(), ...)`."""
    from ci_tools.base import proc

    return proc.start(argv(paths, store=_store["dummy"]), cwd=cwd, timeout=timeout)


def answer(result: CommandResult, *, cwd: Path | None, timeout: float) -> CommandResult:
    """`result`, or where Nix said it has no dummy store, the parse asked again without it
    (and no later one asks for it)."""
    if result.ok or NO_STORE[1] not in result.argv or not refused_store(result.stderr):
        return result
    from ci_tools.base import proc

    _store["dummy"] = False
    paths = result.argv[result.argv.index("--") + 1 :]
    return proc.run(argv(paths, store=False), cwd=cwd, timeout=timeout)
