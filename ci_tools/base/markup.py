"""The one Markdown/HTML escaper: text from a record or a tool, shown in GitHub Markdown (the
step summary of `ci-tools report`, the release notes of `ci-tools release`) as the text it is.

GitHub renders GitHub Flavored Markdown (github.github.com/gfm) with raw HTML (sanitised, but
`<!--` still hides the rest of a page, and `<img>`, `<a>` and `<details>` still render), math
between `$`, and, in the text between, links for `@user` (a notification), `#123` and bare
URLs. Backslash escapes (GFM §2.4) stop the Markdown, not those links: they are made from
the rendered text. A code span (GFM §6.1) stops them all: inside it nothing is Markdown, HTML
or a link.

So `text` passes a plain word through (`x86_64-linux`, `torch-version`, `libtorch_cuda`:
letters, digits, `.` `+` `-` and `_` between two of them, which opens and closes nothing,
GFM §6.2) and writes anything else as a code span whose fence is longer than any run of
backticks in it. Line breaks become spaces and other control characters, bidi overrides and
lone surrogates escapes (`escape.printable`), so a value stays on its line and in its cell;
`|` is written `\\|`, which a table cell reads as `|` even inside a code span (GFM §4.10).
A plain word that is a domain (`www.example.org`) may still be autolinked: it shows exactly
where it points.
"""

from __future__ import annotations

import re

from ci_tools.base.escape import printable

_PLAIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.+-]|_(?=[A-Za-z0-9]))*", re.ASCII)
_BREAKS = re.compile(r"[\r\n\t\u2028\u2029]+")
_TICKS = re.compile(r"`+")


def text(value: str) -> str:
    """`value` as Markdown that renders as exactly its text, on one line ("" for none)."""
    if _PLAIN.fullmatch(value):
        return value
    flat = printable(_BREAKS.sub(" ", value)).replace("|", "\\|")
    if not flat.strip():
        return ""
    fence = "`" * (max((len(run) for run in _TICKS.findall(flat)), default=0) + 1)
    # GFM strips one space from each end of a span that has both: pad, so none of ours goes.
    return f"{fence} {flat} {fence}"
