"""What child processes print, kept within a bound.

A child's output is kept as a bounded head (`Head`) or, streamed, as a bounded tail of lines
(`linecapture`), so no output makes ci-tools hold more than its bound in memory, and no log
makes a record larger than its readers accept. Apart from `bounded` (files) so that a
command that runs no child does not import it at every start.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
