"""Text that reaches a log where GitHub Actions reads workflow commands.

The runner reads a line as a command when, after leading spaces, it starts with `::` (v2),
or when it holds `##[` anywhere (v1): actions/runner src/Runner.Common/ActionCommand.cs
(TryParseV2, TryParse) at 079cdb1d05fe0ec50f8c51de5a4fa51d0eb189b0. Error text quotes input
(catalog keys, paths, arguments), so it must not be able to start a line or hold `##[`.
"""

from __future__ import annotations


def printable(text: str) -> str:
    """`text` with control characters, lone surrogates and bidi overrides as escapes.

    Input quoted in an error message cannot start a new line, move the cursor, or fail to
    encode (a lone surrogate from a YAML escape would make `print` raise).
    """
    out = []
    for char in text:
        code = ord(char)
        if char == "\n":
            out.append(char)
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif (
            0xD800 <= code <= 0xDFFF
            or char in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
        ):
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


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
