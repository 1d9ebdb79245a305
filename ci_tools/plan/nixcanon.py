"""Nix's `--parse` output made canonical: the same expression prints the same text.

Nix 2.8 prints the bindings of an attribute set or `let`, and a function's formals, in the
order of its symbol table (`Symbol` compares by address), so the same file prints
differently after other files were parsed in the same process. `Canon` sorts them (their
order carries no meaning: Nix keeps them in maps) and collects the paths the text holds.
Recipes rendered from one template print alike but for their strings: `canonical_line`
sorts each such shape once (237 recipes have about 30).
"""

from __future__ import annotations

import itertools
import re


def canonical(text: str) -> str:
    """`--parse` output with every attribute set's bindings, every `let`'s bindings and every
    function's formals in sorted order: two texts are equal after this exactly when Nix's
    trees are equal."""
    return Canon(text).run()


# The only places the printed grammar's structure can change: escapes and interpolations in
# strings, brackets, separators, and `let ... in`. Everything between is copied as is.
_TOKENS = r'\\.|\$\{|[{}()\[\];,"]|(?<![A-Za-z0-9_\'-])(?:let|in) '
_SPLIT = re.compile(f"({_TOKENS})")  # the text between tokens, and the tokens
# A line without `${` has no interpolation: each string is then one token, from its opening
# quote to its closing one (a search that starts in code meets an opening quote first).
_SPLIT_PLAIN = re.compile(rf'("(?:[^"\\$]|\\.|\$(?!\{{))*"|{_TOKENS})')
_OPEN = frozenset("([")
_SHUT = frozenset(")]")
# A path as `--parse` prints it: absolute, outside string literals.
_PRINTED_PATH = re.compile(r"(?<![A-Za-z0-9_'\-.])/[A-Za-z0-9._+\-/]+")


class Canon:
    """One pass over a `--parse` line: the canonical text, and the paths it holds.

    The line is split once (in C) into the text between tokens, `gaps`, and the tokens:
    token k follows gap k, and the last gap follows the last token. Only `{...}` and `let`
    bindings are sorted; `(...)` and `[...]` are followed by their depth, so that their
    separators (`with x; y`) are not taken for the enclosing group's."""

    def __init__(self, text: str, *, shaped: bool = False) -> None:
        pieces = (_SPLIT if "${" in text else _SPLIT_PLAIN).split(text)
        self.gaps = pieces[0::2]
        self.tokens = pieces[1::2]
        self.k = 0
        self.paths: list[str] = []
        self.shaped = shaped  # its strings are placeholders (`_shape`)
        self.exact = True  # no order it sorted depends on what the placeholders stand for

    def run(self) -> str:
        return "".join(self.group("", bindings=False)[0])

    def group(self, closer: str, *, bindings: bool) -> tuple[list[str], list[int], list[int]]:
        """Up to `closer` (consumed), or for `let` bindings up to the `in` after a `;`.

        Returns the pieces and where this level's `;` and `,` are in them. The text before
        each token (outside strings) is taken once, and its paths collected."""
        parts: list[str] = []
        semicolons: list[int] = []
        commas: list[int] = []
        tokens, gaps, paths = self.tokens, self.gaps, self.paths
        depth = 0
        while True:
            k = self.k
            gap = gaps[k]
            if gap:
                gaps[k] = ""
                if "/" in gap:
                    paths.extend(_PRINTED_PATH.findall(gap))
                parts.append(gap)
            if k == len(tokens):
                return parts, semicolons, commas
            lexeme = tokens[k]
            self.k = k + 1
            if lexeme in _OPEN:
                depth += 1
            elif lexeme in _SHUT:
                depth -= 1
            elif lexeme == '"':
                lexeme = self.string()
            elif lexeme == "{":
                lexeme = "{" + self.sorted(*self.group("}", bindings=False)) + "}"
            elif lexeme == "let ":
                lexeme = "let" + self.sorted(*self.group("", bindings=True))
            elif depth:
                pass  # a `;`, `,` or `in` inside brackets is theirs
            elif lexeme == closer:
                return parts, semicolons, commas
            elif lexeme == ";":
                semicolons.append(len(parts))
            elif lexeme == ",":
                commas.append(len(parts))
            elif lexeme == "in " and bindings and _after_a_binding(parts, semicolons):
                self.k = k
                return parts, semicolons, commas  # the `in` is the caller's
            parts.append(lexeme)

    def sorted(self, parts: list[str], semicolons: list[int], commas: list[int]) -> str:
        """A group's bindings (`a = 1; b = 2;`) or formals (`x, y ? 1, ...`) in sorted
        order. In a shape (`shaped`) it also checks that the order is decided before the
        first string of each: else `exact` turns False."""
        for separator, cuts in ((";", semicolons), (",", commas)):
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
            if self.shaped and self.exact:
                self.exact = _decided_before_strings(body)
            if separator == ";":
                return " " + "; ".join(body) + "; "
            return " " + ", ".join(body + tail) + " "
        return "".join(parts)

    def string(self) -> str:
        """The rest of a string literal (one with an interpolation), its `${...}` parts
        canonical."""
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


def _decided_before_strings(pieces: list[str]) -> bool:
    """Whether sorted `pieces` keep their order whatever their strings hold: the text before
    each one's first string (placeholder) differs from every other's before either ends."""
    heads = sorted(piece.split(_HELD, 1)[0] for piece in pieces)
    return all(not b.startswith(a) for a, b in itertools.pairwise(heads))


# A string without interpolation, and the placeholder `_shape` puts in its place: `"`, NUL,
# its number, NUL, `"` (Nix strings hold no NUL; a line that does is not shaped).
_STRING = re.compile(r'"(?:[^"\\$]|\\.|\$(?!\{))*"')
_HELD = "\x00"
_PLACEHOLDER = re.compile('"\x00([0-9]+)\x00"')
# Shape -> its canonical text (None: not `exact`) and its paths. Lines rendered from one
# template differ in their strings only: one shape, sorted once. Per process, never stored.
_SHAPES: dict[str, tuple[str | None, list[str]]] = {}


def canonical_line(line: str) -> tuple[str, list[str]]:
    """`Canon(line)`'s text and paths, from the line's shape where one was seen before: the
    line with each string a numbered placeholder, sorted once and its strings put back."""
    if "${" in line or _HELD in line:
        canon = Canon(line)
        return canon.run(), canon.paths
    strings: list[str] = []

    def hold(match: re.Match[str]) -> str:
        strings.append(match.group())
        return f'"{_HELD}{len(strings) - 1}{_HELD}"'

    shape = _STRING.sub(hold, line)
    known = _SHAPES.get(shape)
    if known is None:
        canon = Canon(shape, shaped=True)
        sorted_shape = canon.run()
        known = _SHAPES[shape] = (sorted_shape if canon.exact else None, canon.paths)
    text, paths = known
    if text is None:  # the order depends on what the strings hold
        canon = Canon(line)
        return canon.run(), canon.paths
    return _PLACEHOLDER.sub(lambda match: strings[int(match.group(1))], text), list(paths)
