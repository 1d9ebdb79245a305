"""What a streamed child prints (`proc.stream`): its lines, each cut at a bound as it
arrives (`Lines`), and the last of them (`Tail`).

Apart from `capture` so that a command that only captures a child's output (the workflow's
`ci-tools matrix`: git and Nix) does not create these records at every start.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from ci_tools.base.capture import cut_marker


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
