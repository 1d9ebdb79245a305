"""The one wrapper for external commands (flox, nix, git, nvidia-smi, ...).

Every subprocess ci-tools starts goes through here: resolved from PATH, with a timeout,
captured output bounded in size (`capture`), and a clear error (exit 2) when the tool is
missing. An interrupt (Ctrl-C, SIGTERM) kills the child before it propagates. What a child
says is redacted here (`redact`): its text output, and each streamed line before anyone sees
it. `run_bytes` keeps stdout as the child wrote it: it is data (git objects to hash), never a
log.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ci_tools.base import capture, redact
from ci_tools.base.errors import InputError

# What `run` keeps of each stream, and how long a line `stream` passes on may be: far above
# what any tool ci-tools asks says, far below what would exhaust memory.
MAX_OUTPUT = 16 << 20
MAX_LINE = 16 << 10

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
    truncated: bool = False  # output past `max_output` was dropped

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
    max_output: int | None = None,
) -> CommandResult:
    """Run a command to completion and capture its output. Never raises for a non-zero exit.

    Each stream keeps its first `max_output` bytes (default MAX_OUTPUT); `truncated` says
    when there was more."""
    data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
    done = _finish(
        _begin(argv, cwd=cwd, env=env, timeout=timeout, stdin=data, max_output=max_output)
    )
    return _as_result(tuple(argv), env, done)


def _as_result(
    argv: tuple[str, ...], env: Mapping[str, str] | None, done: _Captured
) -> CommandResult:
    hide = redact.known(env)
    return CommandResult(
        argv=argv,
        returncode=done.returncode,
        stdout=hide(_text(done.stdout.text())),
        stderr=hide(_text(done.stderr.text())),
        seconds=done.seconds,
        timed_out=done.timed_out,
        truncated=bool(done.stdout.dropped or done.stderr.dropped),
    )


@dataclass(frozen=True, kw_only=True)
class BytesResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: str
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run_bytes(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    timeout: float | None = 600,
    stdin: bytes | None = None,
    max_output: int | None = None,
) -> BytesResult:
    """`run` for output that must stay bytes (`git cat-file --batch` counts its sizes in
    bytes; text decoding would shift them and lose the bytes a hash must see)."""
    done = _finish(
        _begin(argv, cwd=cwd, env=None, timeout=timeout, stdin=stdin, max_output=max_output)
    )
    return BytesResult(
        argv=tuple(argv),
        returncode=done.returncode,
        stdout=bytes(done.stdout.kept),
        stderr=redact.redact(_text(done.stderr.text())),
        timed_out=done.timed_out,
        truncated=bool(done.stdout.dropped or done.stderr.dropped),
    )


def stream(
    argv: Sequence[str],
    *,
    on_line: Callable[[str], None],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    keep_lines: int = 200,
    max_line: int = MAX_LINE,
) -> CommandResult:
    """Run a long command, passing each output line (stdout and stderr merged) to `on_line`
    as it comes, and keep only the last `keep_lines` lines. A line longer than `max_line`
    bytes is cut there (`linecapture.Lines`): a log of huge lines costs no more than its
    bound."""
    from ci_tools.base import linecapture  # here: only a streamed child's lines need it

    hide = redact.known(env)
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    process = _start(argv, cwd=cwd, env=env, stdin=None, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    lines = linecapture.Lines(max_line)
    tail = linecapture.Tail(keep_lines)
    timed_out = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and (left <= 0 or not selector.select(left)):
                    timed_out = True
                    break
                chunk = os.read(process.stdout.fileno(), _CHUNK)
                for line in [*lines.feed(chunk), *([] if chunk else lines.close())]:
                    line = hide(line)
                    tail.add(line)
                    on_line(line)
                if not chunk:
                    break
    except BaseException:
        # `on_line` may stop the run on purpose (it has read enough): the pipe is closed too.
        _stop(process)
        process.stdout.close()
        raise
    if timed_out:
        _stop(process)
    returncode = process.wait()
    process.stdout.close()
    return CommandResult(
        argv=tuple(argv),
        returncode=returncode,
        stdout=tail.text(),
        stderr="",
        seconds=time.monotonic() - started,
        timed_out=timed_out,
    )


# --- starting, draining and stopping a child -------------------------------------------------

_CHUNK = 1 << 16


@dataclass(frozen=True, kw_only=True)
class _Captured:
    returncode: int
    stdout: capture.Head
    stderr: capture.Head
    seconds: float
    timed_out: bool


def _start(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str] | None,
    stdin: int | None,
    stderr: int,
) -> subprocess.Popen[bytes]:
    executable = require(argv[0], env)
    try:
        return subprocess.Popen(
            [executable, *argv[1:]],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    except OSError as exc:
        raise InputError(f"cannot run `{argv[0]}`: {exc}") from None


@dataclass(frozen=True, kw_only=True)
class Running:
    """A child `start` started, its output drained in the background."""

    argv: tuple[str, ...]
    process: subprocess.Popen[bytes]
    heads: tuple[capture.Head, capture.Head]
    threads: tuple[threading.Thread, ...]
    started: float
    timeout: float | None

    def result(self) -> CommandResult:
        """What `run` would have returned (the timeout counts from the start)."""
        return _as_result(self.argv, None, _finish(self))

    def stop(self) -> None:
        """Kill the child and reap it, its answer unread."""
        _stop(self.process)


def start(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    timeout: float | None = 600,
    max_output: int | None = None,
) -> Running:
    """`run`, started now and answered later (`Running.result`): the child works while this
    process does something else. A child whose answer is never asked for ends on its own."""
    return _begin(argv, cwd=cwd, env=None, timeout=timeout, stdin=None, max_output=max_output)


def _begin(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str] | None,
    timeout: float | None,
    stdin: bytes | None,
    max_output: int | None,
) -> Running:
    """Start the child and drain its output (`_finish` waits for it), keeping the first
    `max_output` bytes of stdout and of stderr and draining the rest, so a child that
    prints without end costs a bounded amount."""
    started = time.monotonic()
    process = _start(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else None,
        stderr=subprocess.PIPE,
    )
    limit = MAX_OUTPUT if max_output is None else max_output
    heads = (capture.Head(limit), capture.Head(limit))
    threads = [
        threading.Thread(target=_drain, args=(pipe, head.feed), daemon=True)
        for pipe, head in zip((process.stdout, process.stderr), heads, strict=True)
    ]
    if stdin is not None:
        threads.append(threading.Thread(target=_feed, args=(process, stdin), daemon=True))
    for thread in threads:
        thread.start()
    return Running(
        argv=tuple(argv),
        process=process,
        heads=heads,
        threads=tuple(threads),
        started=started,
        timeout=timeout,
    )


def _finish(child: Running) -> _Captured:
    process = child.process
    left = None if child.timeout is None else child.started + child.timeout - time.monotonic()
    timed_out = False
    try:
        timed_out = not _wait(process, None if left is None else max(left, 0.0))
    except BaseException:
        _stop(process)
        raise
    if timed_out:
        _stop(process)
    for thread in child.threads:
        # A grandchild may hold the pipes open after the child ended: do not wait for it.
        thread.join(timeout=None if not timed_out else 5)
    return _Captured(
        returncode=-1 if timed_out else process.returncode,
        stdout=child.heads[0],
        stderr=child.heads[1],
        seconds=time.monotonic() - child.started,
        timed_out=timed_out,
    )


def _wait(process: subprocess.Popen[bytes], timeout: float | None) -> bool:
    """Wait for the child to exit; False when `timeout` ran out first. `Popen.wait` with a
    timeout polls, sleeping up to 50 ms between looks (a 35 ms child took 60 ms): a thread
    blocked in `waitpid` wakes this one the moment the child exits."""
    if timeout is None:
        process.wait()
        return True
    waiter = threading.Thread(target=process.wait, daemon=True)
    waiter.start()
    waiter.join(timeout)
    return not waiter.is_alive()


def _drain(pipe: IO[bytes] | None, sink: Callable[[bytes], None]) -> None:
    if pipe is None:
        return
    with contextlib.suppress(OSError, ValueError), pipe:
        while chunk := os.read(pipe.fileno(), _CHUNK):
            sink(chunk)


def _feed(process: subprocess.Popen[bytes], data: bytes) -> None:
    assert process.stdin is not None
    # A child that exits without reading its input closes the pipe: not an error here.
    with contextlib.suppress(OSError, ValueError), process.stdin:
        process.stdin.write(data)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the child and reap it (an interrupt or a timeout must not leave it running)."""
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def _text(data: str) -> str:
    """Line breaks as text mode reads them (universal newlines): `\r\n` and `\r` are `\n`."""
    return data.replace("\r\n", "\n").replace("\r", "\n")
