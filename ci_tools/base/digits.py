"""Numbers from outside ci-tools (a tool's output, a record, an API's header, an argument):
ASCII digits only, and bounded, before anything computes with them.

Python's `int()`, `float()`, `str.isdigit()` and `\\d` accept any Unicode digit (Arabic-Indic
U+0669, fullwidth U+FF19, superscript U+00B2 for isdigit), `int()` refuses a text of more
than 4,300 digits with a ValueError, and a whole number far beyond a float's range (a JSON `1e400`
written out, 10**400) makes `float()` and every division by it raise OverflowError. So a
number read from outside is read here, or refused; it is never passed on as a crash.
"""

from __future__ import annotations

import re

# RFC 8259 §6: integers in [-(2**53)+1, 2**53-1] are the ones JSON implementations agree on
# (a double holds them exactly); a count or a byte size beyond it is no real count.
MAX_SAFE_INTEGER = 2**53 - 1
# A pattern, compiled by `re` on first use: most commands read no outside number.
_WHOLE = r"[0-9]+"


def whole(
    text: str, *, max_digits: int = 15, low: int = 0, high: int = MAX_SAFE_INTEGER
) -> int | None:
    """`text` as a whole number of ASCII digits (at most `max_digits`) from `low` to `high`;
    None when it is anything else."""
    if len(text) > max_digits or not re.fullmatch(_WHOLE, text, re.ASCII):
        return None
    value = int(text)
    return value if low <= value <= high else None


def count(value: object, *, high: int = MAX_SAFE_INTEGER) -> int | None:
    """A JSON value as a whole number from 0 to `high` (bool is no number); None otherwise."""
    if type(value) is not int or not 0 <= value <= high:
        return None
    return value


def dotted(text: str, widths: tuple[int, ...]) -> tuple[int, ...] | None:
    """`text` as dotted whole numbers, one per width, each of 1 to that many ASCII digits
    (`dotted("12.1", (3, 2))` is (12, 1)); None when it is anything else."""
    parts = text.split(".")
    if len(parts) != len(widths):
        return None
    values = [whole(part, max_digits=width) for part, width in zip(parts, widths, strict=True)]
    if any(value is None for value in values):
        return None
    return tuple(value for value in values if value is not None)


def shown(text: str, limit: int = 40) -> str:
    """`text` as a message quotes it: at most `limit` characters, and says how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
