"""Paths in Nix text: the references a file's path literals make, and, read from the raw
text alone, a superset of them (`broad_references`) cheap enough to run on every recipe.

A reference is a repository path (`nix/builders/x.nix`), a folder ending in `/`; the
literal is resolved against the folder of the file that holds it, as Nix resolves it.
"""

from __future__ import annotations

import posixpath
import re

# Nix's lexer (nix/src/libexpr/lexer.l): PATH_CHAR [a-zA-Z0-9\.\_\-\+].
PATH_CHAR = r"[A-Za-z0-9._+\-]"
# Runs of the characters a path token may hold (and `'`, which an identifier may: `a'b./c`
# is the identifier `a'b`, then the path `./c`), found from each `/` in the text: a search
# for a literal is fast, a regular expression tried at every position is not (237 recipes:
# 1 ms against 55).
_RUN = re.compile(r"[A-Za-z0-9._+\-/']*")
_PATH_TOKEN = re.compile(rf"{PATH_CHAR}*(?:/{PATH_CHAR}+)+/?")
_ID_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def broad_references(path: str, text: str) -> tuple[str, ...]:
    """A superset of the references Nix's parse finds in the text and of `raw_references`'
    `every`, comments and strings included: what may decide a fingerprint, read without the
    cost of either (`unchanged`). Every place a path token may start in a run is tried:
    the run's start, after `//` (the update operator), and after an identifier with a `'`."""
    here = posixpath.dirname(path)
    found: set[str] = set()
    for run, interpolated in _runs(text):
        for part in run.split("//"):
            pieces = part.split("'")
            for index, piece in enumerate(pieces):
                last = interpolated and index == len(pieces) - 1
                for start in _starts(piece, after_quote=index > 0):
                    found.update(_tokens(piece, start, interpolated=last))
    return kept_references({join_reference(here, t) for t in found if not t.startswith("/")}, path)


def _runs(text: str) -> list[tuple[str, bool]]:
    """Each run of path characters holding a `/`, and whether `${` follows it. A block
    comment's close (`*/`) ends in a `/`: a run that starts with it is also given without
    it (`/* c */./x.nix` is the path `./x.nix`, not `/./x.nix`)."""
    backwards = text[::-1]
    size = len(text)
    out: list[tuple[str, bool]] = []
    slash = text.find("/")
    while slash != -1:
        mirrored = size - 1 - slash  # the slash in `backwards`
        start = slash + 1 - (_run_end(backwards, mirrored) - mirrored)
        end = _run_end(text, slash)
        interpolated = text.startswith("${", end)
        out.append((text[start:end], interpolated))
        if start and text.startswith("*/", start - 1):
            out.append((text[start + 1 : end], interpolated))
        slash = text.find("/", end)
    return out


def _run_end(text: str, start: int) -> int:
    match = _RUN.match(text, start)  # it matches the empty string too: never None
    return match.end() if match is not None else start


def _starts(piece: str, *, after_quote: bool) -> set[int]:
    """Where a token may start in a piece: its start, and after a `'` also where the
    identifier the quote belongs to ends."""
    starts = {0}
    if after_quote:
        starts.add(next((i for i, c in enumerate(piece) if c not in _ID_CHAR), len(piece)))
    return starts


def _tokens(piece: str, start: int, *, interpolated: bool) -> list[str]:
    """The path token at `start`, and before an interpolation the folder it opens."""
    out: list[str] = []
    match = _PATH_TOKEN.match(piece, start)
    if match is not None:
        out.append(match.group())
    cut = piece.rfind("/") + 1
    if interpolated and cut > start:
        out.append(piece[start:cut])
        # The raw reading (`nixraw`) also takes each `./` or `../` inside the token for the
        # start of a folder (`ab./c/${x}`: `./c/`).
        out.extend(
            piece[dot:cut] for dot in range(start + 1, cut) if piece.startswith(("./", "../"), dot)
        )
    return out


def kept_references(references: set[str], path: str) -> tuple[str, ...]:
    """Those inside the repository, but for the file itself and the root."""
    return tuple(sorted(r for r in references if not r.startswith("../") and r not in (".", path)))


def join_reference(here: str, literal: str) -> str:
    folder = literal.endswith("/")
    joined = posixpath.normpath(posixpath.join(here, literal))
    return joined + "/" if folder and joined != "." else joined
