"""Text that reaches a log where GitHub Actions reads workflow commands.

The runner reads a line as a command when, after leading white space, it starts with `::`
(v2), or when it holds `##[` anywhere (v1): actions/runner src/Runner.Common/ActionCommand.cs
(TryParseV2, TryParse) at 079cdb1d05fe0ec50f8c51de5a4fa51d0eb189b0. It reads the lines of a
step's stdout and stderr alike, and .NET's line reader ends a line at `\r` as well as `\n`.
GitHub's "Workflow commands for GitHub Actions" (docs.github.com/en/actions/reference/
workflows-and-actions/workflow-commands) lists what a command can do: `::add-mask::`
hides text, `::error::` fails the look of a run, `::stop-commands::TOKEN` silences every
later command, ci-tools' own annotations included, until `::TOKEN::`.

So every line ci-tools prints, whatever it quotes (its input, a child's output, an API's
answer, a GPU's name), goes through `neutral`, once, at the streams: `guarded_streams`
wraps stdout and stderr for the whole run of a command, redacting known secrets too
(`redact`). ci-tools' own workflow commands are the only lines written as they are, through
`write_command`, and their text is escaped as the commands' grammar says (`escape_data`).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

# Control characters (tab aside), lone surrogates and bidi overrides: each is shown as an
# escape. A carriage return would end the line for the runner; the others move a terminal's
# cursor, reorder what is shown, or fail to encode.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
# A pattern, compiled by `re` on first use: only a quoted input needs it, not every start.
_UNPRINTABLE_BUT_NEWLINE = r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
_V1 = "##["
_V1_BROKEN = "# #["  # the v1 form has no escape for `[`: break it up
_V2 = "::"
_V2_BROKEN = ": :"


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutral(line: str) -> str:
    """One line of a log, made text: the runner can read no command in it.

    Control characters are escapes (a `\\r` or `\\n` inside would start a new line),
    `##[` is broken up, and a line whose first characters past white space are `::` has
    them broken up (`: :`), white space being what either .NET or Python counts as such.
    """
    text = _UNPRINTABLE.sub(_escaped, line).replace(_V1, _V1_BROKEN)
    start = len(text) - len(text.lstrip())
    if text.startswith(_V2, start):
        text = text[:start] + _V2_BROKEN + text[start + len(_V2) :]
    return text


def printable(text: str) -> str:
    """`text` with control characters (line breaks aside), lone surrogates and bidi overrides
    as escapes.

    Input quoted in an error message cannot start a new line, move the cursor, or fail to
    encode (a lone surrogate from a YAML escape would make `print` raise).
    """
    return re.sub(_UNPRINTABLE_BUT_NEWLINE, _escaped, text)


def escape_data(text: str) -> str:
    """The message of a workflow command (`::error ...::MESSAGE`): one line."""
    escaped = printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escaped.replace("##[", "# #[")  # the v1 form has no escape for `[`: break it up


def escape_property(text: str) -> str:
    """A property value of a workflow command (`file=VALUE`)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def log_lines(prefix: str, text: str, *, in_actions: bool) -> list[str]:
    """The lines to print for an error: every line starts with `prefix`, never with `::`.

    Under GitHub Actions, `##[` is broken up too, so no line of the text is a command.
    """
    lines = printable(text).split("\n")
    if in_actions:
        lines = [line.replace("##[", "# #[") for line in lines]
        return [f"{prefix}{line}" for line in lines]
    return [prefix + lines[0], *lines[1:]]


class GuardedStream(io.TextIOBase):
    """A text stream whose every line reaches `inner` redacted and `neutral`.

    Lines are passed on whole: a part written without its line break waits for the rest
    (or `finish`), so `::` split over two writes is still seen at the start of its line.
    """

    def __init__(self, inner: TextIO, redact: Callable[[str], str]) -> None:
        super().__init__()
        self.inner = inner
        self.redact = redact
        self.pending = ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        if lines:
            self.inner.write("".join(neutral(self.redact(line)) + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def command(self, line: str) -> None:
        """One of ci-tools' own workflow commands, on a line of its own: redacted, not
        neutral."""
        self._end_pending_line()
        self.inner.write(self.redact(line.rstrip("\n")) + "\n")

    def finish(self) -> None:
        """Pass on a last line that has no line break, and flush."""
        if self.pending:
            self.inner.write(neutral(self.redact(self.pending)))
            self.pending = ""
        self.inner.flush()

    def _end_pending_line(self) -> None:
        if self.pending:
            self.write("\n")

    def fileno(self) -> int:
        return self.inner.fileno()

    def isatty(self) -> bool:
        return self.inner.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)


@contextmanager
def guarded_streams(redact: Callable[[str], str]) -> Iterator[None]:
    """sys.stdout and sys.stderr as GuardedStreams while the block runs."""
    saved = sys.stdout, sys.stderr
    out, err = GuardedStream(saved[0], redact), GuardedStream(saved[1], redact)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        for stream in (out, err):
            # Nowhere left to say it when a stream itself fails; the exit code still does.
            with contextlib.suppress(OSError, ValueError, UnicodeEncodeError):
                stream.finish()


def write_command(stream: TextIO, line: str) -> None:
    """Write ci-tools' own workflow command `line` (its data already `escape_data`d)."""
    if isinstance(stream, GuardedStream):
        stream.command(line)
    else:
        stream.write(line.rstrip("\n") + "\n")
