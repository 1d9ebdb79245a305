"""Reading inputs with a bound on their size: files, and what child processes print.

Every input ci-tools reads goes through here. A file is read only if it is a regular file (a
FIFO would block the read forever, `/dev/zero` never ends) and only up to a limit. A child's
output is kept as a bounded head (`Head`) or as a bounded tail of lines (`Tail`), each line cut
at a bound as it arrives (`Lines`), so no input makes ci-tools hold more than its bound in
memory, and no log makes a record larger than its readers accept.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
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


# --- child-process output ---------------------------------------------------------------------


def cut_marker(dropped: int) -> str:
    return f" [... {dropped} bytes cut]"


@dataclass
class Head:
    """The first `limit` bytes of a stream; the rest is counted, not kept."""

    limit: int
    kept: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, data: bytes) -> None:
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += data[:room]
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        return self.kept.decode("utf-8", "replace")


@dataclass
class Lines:
    """Splits a byte stream into lines without ever holding more than `max_line` bytes of one:
    a longer line is cut there, and says how much of it was dropped. Line breaks are read as
    text mode reads them: `\n`, `\r\n` and a lone `\r` (a progress line) each end a line."""

    max_line: int
    _pending: bytearray = field(default_factory=bytearray)
    _dropped: int = 0
    _after_cr: bool = False

    def feed(self, data: bytes) -> Iterator[str]:
        if self._after_cr and data.startswith(b"\n"):
            data = data[1:]  # the second half of a `\r\n` split between two reads
        self._after_cr = data.endswith(b"\r")
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            room = self.max_line - len(self._pending)
            self._pending += piece[: max(room, 0)]
            self._dropped += max(0, len(piece) - max(room, 0))
            if end < 0:
                return
            yield self._take()
            start = end + 1

    def close(self) -> Iterator[str]:
        """The last line, when the stream did not end with a line break."""
        if self._pending or self._dropped:
            yield self._take()

    def _take(self) -> str:
        line = bytes(self._pending).decode("utf-8", "replace")
        if self._dropped:
            line += cut_marker(self._dropped)
        self._pending.clear()
        self._dropped = 0
        return line


@dataclass
class Tail:
    """The last `max_lines` lines of a stream (each already cut by `Lines`)."""

    max_lines: int
    lines: deque[str] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = deque(maxlen=self.max_lines)

    def add(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines)


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
