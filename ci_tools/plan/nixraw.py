"""The files a Nix file references, read from its raw text (without `nix-instantiate`).

Every `./` and `../` path anywhere in the text, comments and strings included, is a
reference (`./gen/${name}.nix` meaning its folder): more than Nix's parse finds, never fewer,
so no input is missed. Which references are real, path literals in code, is read by a small
lexer that follows Nix's own (nix/src/libexpr/lexer.l: comments, the two string forms with
their escapes and `${...}` interpolations, identifiers, URIs, `<...>` and paths, `lib/x.nix`
without `./` too): a comment's `./overlays/NAME.nix` names a convention, not a file, so only
a reference in code that names nothing is worth a warning. Text the lexer cannot follow (an
unterminated string or comment, an unbalanced brace) leaves every reference uncertain.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ci_tools.plan.nixpaths import PATH_CHAR as _PATH_CHAR
from ci_tools.plan.nixpaths import join_reference, kept_references

# A relative path literal in raw Nix text (Nix's lexer: PATH and PATH_SEG, relative forms).
_RAW_PATH = re.compile(
    rf"(?<![A-Za-z0-9._+\-/])(\.\.?(?:/{_PATH_CHAR}+)+/?|\.\.?/(?={_PATH_CHAR}*\$\{{))"
)
_RAW_INTERPOLATED = re.compile(rf"(\.\.?/(?:{_PATH_CHAR}+/)*){_PATH_CHAR}*\$\{{")

# Outside strings: what starts a comment or a string, the braces, and the tokens that may
# hold a `/*`, `#`, `''` or `/` without starting anything or naming a file: URI, <SPATH>,
# PATH (or a PATH_SEG before an interpolation), ID; tried in that order, so that the
# longest wins as in Nix's lexer.
_CODE = re.compile(
    r"(?P<comment>\#[^\r\n]*|/\*(?:[^*]|\*+[^*/])*\*+/)"
    r"|(?P<unclosed>/\*)"
    r'|(?P<string>"|\'\')'
    r"|(?P<interpolation>\$\{)"
    r"|(?P<open>\{)"
    r"|(?P<close>\})"
    r"|[a-zA-Z][a-zA-Z0-9+\-.]*:[a-zA-Z0-9%/?:@&=+$,\-_.!~*']+"
    rf"|<{_PATH_CHAR}+(?:/{_PATH_CHAR}+)*>"
    rf"|(?P<path>{_PATH_CHAR}*(?:/{_PATH_CHAR}+)+/?|{_PATH_CHAR}*/(?=\$\{{))"
    r"|[a-zA-Z_][a-zA-Z0-9_'\-]*"
)
# Inside "...": an escape, an interpolation, `$` with what keeps it literal, the end.
_STRING = re.compile(r'\\.|(?P<interpolation>\$\{)|\$[^{"\\]|(?P<end>")', re.DOTALL)
# Inside ''...'': its escapes ('' followed by ', $ or \x), the end, an interpolation, a
# literal `$`.
_INDENTED = re.compile(r"''['$]|''\\.|(?P<end>'')|(?P<interpolation>\$\{)|\$[^{']", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class RawReferences:
    every: tuple[str, ...]  # every path in the text, comments and strings included
    in_code: tuple[str, ...] | None  # the path literals in code; None: the text does not lex


def raw_references(path: str, text: str) -> RawReferences:
    """The references of the Nix file at repository path `path`, from its text."""
    here = posixpath.dirname(path)
    loose = {join_reference(here, m.group(1)) for m in _RAW_PATH.finditer(text)}
    loose |= {join_reference(here, m.group(1)) for m in _RAW_INTERPOLATED.finditer(text)}
    literals = code_paths(text)
    if literals is None:
        return RawReferences(every=kept_references(loose, path), in_code=None)
    # A relative path is relative to the file's folder, with or without a leading `./`.
    in_code = {join_reference(here, literal) for literal in literals if not literal.startswith("/")}
    return RawReferences(
        every=kept_references(loose | in_code, path), in_code=kept_references(in_code, path)
    )


def code_paths(text: str) -> list[str] | None:
    """The path literals in the code of Nix text (not in its comments or strings; in the
    interpolations of both); one that goes on with an interpolation (`./gen/${x}.nix`) as
    its folder (`./gen/`). None when the text does not lex."""
    found: list[str] = []
    # What encloses the position: '"' or "''" (a string), "${" (an interpolation, in code
    # or in a string), "{" (a brace in code).
    stack: list[str] = []
    pos = 0
    while True:
        if stack and stack[-1] in ('"', "''"):
            match = (_STRING if stack[-1] == '"' else _INDENTED).search(text, pos)
            if match is None:
                return None
            if match.group("end") is not None:
                stack.pop()
            elif match.group("interpolation") is not None:
                stack.append("${")
            pos = match.end()
            continue
        match = _CODE.search(text, pos)
        if match is None:
            break
        pos = match.end()
        kind = match.lastgroup
        if kind == "unclosed" or (kind == "close" and not stack):
            return None
        if kind in ("string", "interpolation", "open"):
            stack.append(match.group())
        elif kind == "close":
            stack.pop()
        elif kind == "path":
            literal = match.group()
            if text.startswith("${", pos):
                literal = literal[: literal.rfind("/") + 1]
            found.append(literal)
    return None if stack else found
