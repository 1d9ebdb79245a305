"""The one wrapper for external commands (flox, nix, git, nvidia-smi, ...).

Every subprocess ci-tools starts goes through here: resolved from PATH, with a timeout,
captured output, and a clear error (exit 2) when the tool is missing. What a child says is
redacted here (`redact`): its text output, and each streamed line before anyone sees it.
`run_bytes` keeps stdout as the child wrote it: it is data (git objects to hash), never a log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import redact
from ci_tools.base.errors import InputError

# How to get each tool, for the message when it is missing.
_INSTALL_HINTS = {
    "flox": "install Flox (https://flox.dev/docs/install-flox/) on this runner",
    "nix": "install Nix, or Debian's nix-bin",
    "nix-instantiate": "install Debian's nix-bin (apt-get install nix-bin)",
    "git": "install git",
    "nvidia-smi": "install the NVIDIA driver",
}


class ToolMissingError(InputError):
    def __init__(self, tool: str) -> None:
        hint = _INSTALL_HINTS.get(tool, f"install {tool}")
        super().__init__(f"`{tool}` was not found on PATH: {hint}")
        self.tool = tool


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def which(tool: str, env: Mapping[str, str] | None = None) -> str | None:
    path = (env if env is not None else os.environ).get("PATH")
    return shutil.which(tool, path=path)


def require(tool: str, env: Mapping[str, str] | None = None) -> str:
    found = which(tool, env)
    if found is None:
        raise ToolMissingError(tool)
    return found


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 600,
    stdin: str | None = None,
) -> CommandResult:
    """Run a command to completion and capture its output. Never raises for a non-zero exit."""
    executable = require(argv[0], env)
    hide = redact.known(env)
    started = time.monotonic()
    try:
        completed = subprocess.run(
            [executable, *argv[1:]],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return CommandResult(
            argv=tuple(argv),
            returncode=-1,
            stdout=hide(_text(exc.stdout)),
            stderr=hide(_text(exc.stderr)),
            seconds=time.monotonic() - started,
            timed_out=True,
        )
    except OSError as exc:
        raise InputError(f"cannot run `{argv[0]}`: {exc}") from None
    return CommandResult(
        argv=tuple(argv),
        returncode=completed.returncode,
        stdout=hide(completed.stdout),
        stderr=hide(completed.stderr),
        seconds=time.monotonic() - started,
    )


@dataclass(frozen=True, kw_only=True)
class BytesResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run_bytes(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    timeout: float | None = 600,
    stdin: bytes | None = None,
) -> BytesResult:
    """`run` for output that must stay bytes (`git cat-file --batch` counts its sizes in
    bytes; text decoding would shift them and lose the bytes a hash must see)."""
    executable = require(argv[0])
    try:
        completed = subprocess.run(
            [executable, *argv[1:]],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return BytesResult(
            argv=tuple(argv),
            returncode=-1,
            stdout=exc.stdout or b"",
            stderr=redact.redact(_text(exc.stderr)),
            timed_out=True,
        )
    except OSError as exc:
        raise InputError(f"cannot run `{argv[0]}`: {exc}") from None
    return BytesResult(
        argv=tuple(argv),
        returncode=completed.returncode,
        stdout=completed.stdout,
        stderr=redact.redact(_text(completed.stderr)),
    )


def stream(
    argv: Sequence[str],
    *,
    on_line: Callable[[str], None],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    keep_lines: int = 200,
) -> CommandResult:
    """Run a long command, passing each output line (stdout and stderr merged) to `on_line`
    as it comes, and keep only the last `keep_lines` lines."""
    executable = require(argv[0], env)
    hide = redact.known(env)
    started = time.monotonic()
    tail: deque[str] = deque(maxlen=keep_lines)
    try:
        process = subprocess.Popen(
            [executable, *argv[1:]],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
    except OSError as exc:
        raise InputError(f"cannot run `{argv[0]}`: {exc}") from None
    timed_out = False
    assert process.stdout is not None
    with process:
        for line in process.stdout:
            line = hide(line.rstrip("\n"))
            tail.append(line)
            on_line(line)
            if timeout is not None and time.monotonic() - started > timeout:
                process.kill()
                timed_out = True
                break
        returncode = process.wait()
    return CommandResult(
        argv=tuple(argv),
        returncode=returncode,
        stdout="\n".join(tail),
        stderr="",
        seconds=time.monotonic() - started,
        timed_out=timed_out,
    )


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data
