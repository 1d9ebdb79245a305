"""Nix's `--parse` output made canonical: the same expression prints the same text.

Nix 2.8 prints the bindings of an attribute set or `let`, and a function's formals, in the
order of its symbol table (`Symbol` compares by address), so the same file prints
differently after other files were parsed in the same process. `Canon` sorts them (their
order carries no meaning: Nix keeps them in maps) and collects the paths the text holds.
"""

from __future__ import annotations

import re


def canonical(text: str) -> str:
    """`--parse` output with every attribute set's bindings, every `let`'s bindings and every
    function's formals in sorted order: two texts are equal after this exactly when Nix's
    trees are equal."""
    return Canon(text).run()


# The only places the printed grammar's structure can change: escapes and interpolations in
# strings, brackets, separators, and `let ... in`. Everything between is copied as is.
_TOKENS = re.compile(r'\\.|\$\{|[{}()\[\];,"]|(?<![A-Za-z0-9_\'-])(?:let|in) ')
_SPLIT = re.compile(f"({_TOKENS.pattern})")  # the text between tokens, and the tokens
_CLOSE = {"(": ")", "[": "]", "{": "}"}
# A path as `--parse` prints it: absolute, outside string literals.
_PRINTED_PATH = re.compile(r"(?<![A-Za-z0-9_'\-.])/[A-Za-z0-9._+\-/]+")


class Canon:
    """One pass over a `--parse` line: the canonical text, and the paths it holds.

    The line is split once (in C) into the text between tokens, `gaps`, and the tokens:
    token k follows gap k, and the last gap follows the last token."""

    def __init__(self, text: str) -> None:
        pieces = _SPLIT.split(text)
        self.gaps = pieces[0::2]
        self.tokens = pieces[1::2]
        self.k = 0
        self.paths: list[str] = []

    def run(self) -> str:
        return "".join(self.group("", bindings=False)[0])

    def code(self) -> str:
        """The text outside strings before the next token (or after the last); its paths are
        collected. Taken once: the gap is empty afterwards."""
        chunk = self.gaps[self.k]
        if chunk:
            self.gaps[self.k] = ""
            if "/" in chunk:
                self.paths.extend(_PRINTED_PATH.findall(chunk))
        return chunk

    def group(self, closer: str, *, bindings: bool) -> tuple[list[str], dict[str, list[int]]]:
        """Up to `closer` (consumed), or for `let` bindings up to the `in` after a `;`.

        Returns the pieces and, per separator, where this level's separators are in them.
        """
        parts: list[str] = []
        seps: dict[str, list[int]] = {";": [], ",": []}
        tokens = self.tokens
        while self.k < len(tokens):
            lexeme = tokens[self.k]
            parts.append(self.code())
            if lexeme == closer:
                self.k += 1
                return parts, seps
            if lexeme == "in " and bindings and _after_a_binding(parts, seps[";"]):
                return parts, seps  # the `in` is the caller's
            self.k += 1
            if lexeme in seps:
                seps[lexeme].append(len(parts))
                parts.append(lexeme)
            elif lexeme == "let ":
                parts.append("let" + _sorted(*self.group("", bindings=True)))
            elif lexeme == '"':
                parts.append(self.string())
            elif lexeme in _CLOSE:
                inner, inner_seps = self.group(_CLOSE[lexeme], bindings=False)
                body = _sorted(inner, inner_seps) if lexeme == "{" else "".join(inner)
                parts.append(lexeme + body + _CLOSE[lexeme])
            else:
                parts.append(lexeme)
        parts.append(self.code())
        return parts, seps

    def string(self) -> str:
        """The rest of a string literal, its `${...}` parts canonical."""
        parts = ['"']
        tokens = self.tokens
        while self.k < len(tokens):
            lexeme = tokens[self.k]
            parts.append(self.gaps[self.k])
            self.gaps[self.k] = ""
            self.k += 1
            if lexeme == '"':
                parts.append(lexeme)
                return "".join(parts)
            if lexeme == "${":
                parts.append("${" + "".join(self.group("}", bindings=False)[0]) + "}")
            else:
                parts.append(lexeme)
        parts.append(self.gaps[self.k])
        self.gaps[self.k] = ""
        return "".join(parts)


def _after_a_binding(parts: list[str], semicolons: list[int]) -> bool:
    """Whether nothing but blanks follows the last `;` of `parts` (a `let`'s `in` comes)."""
    return bool(semicolons) and not "".join(parts[semicolons[-1] + 1 :]).strip()


def _sorted(parts: list[str], seps: dict[str, list[int]]) -> str:
    """A group's bindings (`a = 1; b = 2;`) or formals (`x, y ? 1, ...`) in sorted order."""
    for separator in (";", ","):
        cuts = seps[separator]
        if not cuts:
            continue
        pieces: list[str] = []
        start = 0
        for cut in cuts:
            pieces.append("".join(parts[start:cut]).strip())
            start = cut + 1
        pieces.append("".join(parts[start:]).strip())
        rest = [p for p in pieces if p]
        tail = [p for p in rest if p == "..."]
        body = sorted(p for p in rest if p != "...")
        if separator == ";":
            return " " + "; ".join(body) + "; "
        return " " + ", ".join(body + tail) + " "
    return "".join(parts)
