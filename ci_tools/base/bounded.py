"""Reading inputs with a bound on their size: files, and what ci-tools quotes or stores.

Every input ci-tools reads goes through here. A file is read only if it is a regular file (a
FIFO would block the read forever, `/dev/zero` never ends) and only up to a limit. What a
child process prints is kept within a bound by `capture` (apart, so that a command that runs
no child, `ci-tools matrix`, does not import it at every start).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_CHUNK = 1 << 16


class RefusedInput(OSError):
    """An input refused for what it is or how large it is; `str()` is the reason alone."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class TooLarge(RefusedInput):
    """A regular file refused only for holding more than the limit."""


def read_bytes(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`; RefusedInput when it is something else (a
    folder, FIFO, socket or device) or TooLarge when it holds more than `limit` bytes. Other OSErrors (no
    such file, permission denied) pass through as they are."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RefusedInput("not a regular file (a folder, FIFO, socket or device)")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise TooLarge(f"larger than {limit} bytes")
    finally:
        os.close(fd)


def read_text(path: Path, limit: int, *, errors: str = "strict") -> str:
    """`read_bytes` decoded as UTF-8 (UnicodeDecodeError under `errors="strict"`)."""
    return read_bytes(path, limit).decode("utf-8", errors)


def tail_text(text: str, max_bytes: int) -> str:
    """The end of `text` in at most `max_bytes` UTF-8 bytes, starting at a line where it can,
    with a first line saying what was left out: how a log is stored in a record."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    kept = data[len(data) - max_bytes :]
    newline = kept.find(b"\n")
    if 0 <= newline < len(kept) - 1:
        kept = kept[newline + 1 :]
    dropped = len(data) - len(kept)
    return f"[... {dropped} earlier bytes cut]\n" + kept.decode("utf-8", "replace")


def shorten(text: str, limit: int = 1000) -> str:
    """`text` with every line cut to `limit` characters: what ci-tools quotes back from its
    input (an argument, a catalog value) is never echoed in full when it is huge."""
    lines = text.split("\n")
    if all(len(line) <= limit for line in lines):
        return text
    return "\n".join(
        line if len(line) <= limit else f"{line[:limit]} [... {len(line) - limit} characters cut]"
        for line in lines
    )
