"""Nix files as Nix: their normalised text and the files they reference.

Two versions of a Nix file are equal when Nix's own parser says so: `nix-instantiate --parse`
prints the expression without comments or layout but with every string's content (a `#`
line inside a `''...''` string is string content, and stays). Without `nix-instantiate`
the raw bytes stand in: any byte change counts, never the other way round.

References are every path literal (`import ./x.nix`, `callPackage ../y {}`, `src = ./p.patch`,
`./dir` meaning `dir/default.nix` or the whole folder): the parser prints each one as an
absolute path, resolved against the file's own folder, so it is read from the parse, not
guessed from text. A path with an interpolation (`./pkgs/${name}.nix`) stands for its whole
folder. Without Nix a regular expression over the raw text finds the `./` and `../`
literals, comments and strings included: more references, never fewer.

Cost: the files are written once to a temporary folder and parsed by one `nix-instantiate`
per `_CHUNK` files (it prints one line per file); results are cached by (path, content), so a
second commit costs only the files that differ. A file Nix refuses to parse is read raw,
and its error is kept for the caller to report.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tools import proc

NIX_PARSER = "nix-instantiate"
_CHUNK = 400
_TIMEOUT = 300
_PATH_CHAR = r"[A-Za-z0-9._+\-]"
# A relative path literal in raw Nix text (Nix's lexer: PATH and PATH_SEG, relative forms).
_RAW_PATH = re.compile(
    rf"(?<![A-Za-z0-9._+\-/])(\.\.?(?:/{_PATH_CHAR}+)+/?|\.\.?/(?={_PATH_CHAR}*\$\{{))"
)
_RAW_INTERPOLATED = re.compile(rf"(\.\.?/(?:{_PATH_CHAR}+/)*){_PATH_CHAR}*\$\{{")


@dataclass(frozen=True, kw_only=True)
class NixFile:
    """What a Nix file contributes to a fingerprint."""

    digest: str  # sha256 of the normalised text, prefixed by how it was normalised
    references: tuple[str, ...]  # repository paths; a trailing "/" means the whole folder
    error: str | None = None  # why Nix could not parse it (then `digest` is of the raw bytes)
    parsed: bool = False  # the references come from Nix's parse, not from the raw text


class NixReader:
    """Normalises Nix files, with a cache across commits keyed by (path, content)."""

    def __init__(self, *, use_nix: bool | None = None) -> None:
        found = proc.which(NIX_PARSER) is not None
        self.use_nix = found if use_nix is None else (use_nix and found)
        self._cache: dict[tuple[str, bytes], NixFile] = {}
        self.parser_calls = 0

    @property
    def mode(self) -> str:
        return "nix-parse" if self.use_nix else "raw-bytes"

    def read(self, files: Mapping[str, bytes]) -> dict[str, NixFile]:
        """`files`: repository path -> content. Paths are relative to the repository root."""
        out: dict[str, NixFile] = {}
        todo: dict[str, bytes] = {}
        for path, data in files.items():
            cached = self._cache.get((path, data))
            if cached is not None:
                out[path] = cached
            else:
                todo[path] = data
        if todo:
            fresh = self._parse_all(todo) if self.use_nix else {}
            for path, data in todo.items():
                result = fresh.get(path) or _raw(path, data, None)
                self._cache[(path, data)] = result
                out[path] = result
        return out

    def _parse_all(self, files: Mapping[str, bytes]) -> dict[str, NixFile]:
        out: dict[str, NixFile] = {}
        with tempfile.TemporaryDirectory(prefix="ci-tools-nix-") as tmp:
            root = Path(tmp).resolve() / "r"
            for path, data in files.items():
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            paths = sorted(files)
            for start in range(0, len(paths), _CHUNK):
                chunk = paths[start : start + _CHUNK]
                out.update(self._parse_chunk(root, chunk, files))
        return out

    def _parse_chunk(
        self, root: Path, chunk: list[str], files: Mapping[str, bytes]
    ) -> dict[str, NixFile]:
        lines = self._parse(root, chunk)
        if lines is not None and len(lines) == len(chunk):
            return {p: _parsed(root, p, line) for p, line in zip(chunk, lines, strict=True)}
        # One file Nix refuses fails the whole call: parse one by one to find it.
        out: dict[str, NixFile] = {}
        for path in chunk:
            single = self._parse(root, [path])
            if single is not None and len(single) == 1:
                out[path] = _parsed(root, path, single[0])
            else:
                out[path] = _raw(path, files[path], self._error(root, path))
        return out

    def _parse(self, root: Path, paths: list[str]) -> list[str] | None:
        self.parser_calls += 1
        result = proc.run([NIX_PARSER, "--parse", "--", *paths], cwd=root, timeout=_TIMEOUT)
        if not result.ok:
            return None
        return result.stdout.splitlines()

    def _error(self, root: Path, path: str) -> str:
        result = proc.run([NIX_PARSER, "--parse", "--", path], cwd=root, timeout=_TIMEOUT)
        text = result.stderr.replace(str(root) + "/", "").strip()
        return text.splitlines()[0] if text else "nix-instantiate --parse failed"


def _parsed(root: Path, path: str, line: str) -> NixFile:
    prefix = str(root)
    # Paths print absolute: make them relative to the repository so the text is the same
    # wherever it was parsed.
    normalised = canonical(line.replace(prefix + "/", "/").replace(prefix, "/"))
    refs = tuple(sorted({r for r in _absolute_paths(line, prefix) if r is not None and r != path}))
    return NixFile(
        digest="nix:" + hashlib.sha256(normalised.encode()).hexdigest(),
        references=refs,
        parsed=True,
    )


def canonical(text: str) -> str:
    """`--parse` output with every attribute set's bindings and every function's formals in
    sorted order.

    Nix 2.8 prints them in the order of its symbol table (`Symbol` compares by address), so
    the same file prints differently after other files were parsed in the same process.
    Their order carries no meaning (Nix keeps attributes in a map), so sorting them loses
    nothing: two texts are equal after this exactly when Nix's trees are equal.
    """
    out, _ = _group(text, 0, "")
    return out


_CLOSE = {"(": ")", "[": "]", "{": "}"}


def _group(text: str, i: int, closer: str, *, bindings: bool = False) -> tuple[str, int]:
    """Canonical text from `i` up to `closer` (exclusive) and the index after it.

    `bindings`: the text after `let`, which ends before the `in` that follows its last `;`.
    """
    parts: list[str] = []
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == closer:
            return "".join(parts), i + 1
        if bindings and text.startswith("in ", i) and "".join(parts).rstrip().endswith(";"):
            return "".join(parts), i
        if text.startswith("let ", i) and (i == 0 or text[i - 1] in "( "):
            inner, i = _group(text, i + 4, "", bindings=True)
            parts.append("let" + _sorted_bindings(inner))
        elif ch == '"':
            end = _string_end(text, i)
            parts.append(text[i:end])
            i = end
        elif ch in _CLOSE:
            inner, i = _group(text, i + 1, _CLOSE[ch])
            if ch == "{":
                inner = _sorted_bindings(inner)
            parts.append(ch + inner + _CLOSE[ch])
        else:
            parts.append(ch)
            i += 1
    return "".join(parts), i


def _string_end(text: str, i: int) -> int:
    """The index after the string literal starting at `i` (with `${...}` inside it)."""
    i += 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == '"':
            return i + 1
        elif text.startswith("${", i):
            _, i = _group(text, i + 2, "}")
        else:
            i += 1
    return n


def _sorted_bindings(inner: str) -> str:
    """A brace group's content (already canonical inside): `a = 1; b = 2;` or `x, y ? 1`."""
    for separator in (";", ","):
        pieces = _split_top(inner, separator)
        if len(pieces) > 1:
            rest = [p.strip() for p in pieces if p.strip()]
            tail = [p for p in rest if p == "..."]
            body = sorted(p for p in rest if p != "...")
            joiner = "; " if separator == ";" else ", "
            end = ";" if separator == ";" else ""
            return " " + joiner.join(body + tail) + end + " "
    return inner


def _split_top(inner: str, separator: str) -> list[str]:
    pieces: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(inner)
    while i < n:
        ch = inner[i]
        if ch == '"':
            i = _string_end(inner, i)
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == separator and depth == 0:
            pieces.append(inner[start:i])
            start = i + 1
        i += 1
    pieces.append(inner[start:])
    return pieces


def _raw(path: str, data: bytes, error: str | None) -> NixFile:
    text = data.decode("utf-8", "replace")
    here = posixpath.dirname(path)
    found: set[str] = set()
    for match in _RAW_PATH.finditer(text):
        found.add(_join(here, match.group(1)))
    for match in _RAW_INTERPOLATED.finditer(text):
        found.add(_join(here, match.group(1)))
    refs = tuple(sorted(r for r in found if not r.startswith("../") and r not in (".", path)))
    return NixFile(digest="raw:" + hashlib.sha256(data).hexdigest(), references=refs, error=error)


def _join(here: str, literal: str) -> str:
    folder = literal.endswith("/")
    joined = posixpath.normpath(posixpath.join(here, literal))
    return joined + "/" if folder and joined != "." else joined


def _absolute_paths(line: str, root: str) -> Iterable[str | None]:
    """Path tokens of a `--parse` line (outside string literals), relative to `root`."""
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == '"':
            i += 1
            while i < n and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
            continue
        if ch == "/" and (i == 0 or not re.match(r"[A-Za-z0-9_'\-.]", line[i - 1])):
            j = i + 1
            while j < n and re.match(r"[A-Za-z0-9._+\-/]", line[j]):
                j += 1
            token = line[i:j]
            i = j
            if token == root or token.startswith(root + "/"):
                rel = token[len(root) + 1 :]
                yield rel if rel else None
            continue
        i += 1


def resolve(
    reference: str, files: Mapping[str, object], folders: Mapping[str, list[str]]
) -> list[str] | None:
    """The repository files a reference stands for; None when nothing is there.

    A file path is that file; a folder (or a path ending in "/") is every file under it.
    """
    if not reference.endswith("/") and reference in files:
        return [reference]
    folder = reference.rstrip("/")
    under = folders.get(folder)
    return list(under) if under else None


def folder_index(paths: Iterable[str]) -> dict[str, list[str]]:
    """folder -> every file path below it (at any depth)."""
    index: dict[str, list[str]] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            index.setdefault("/".join(parts[:depth]), []).append(path)
    return index
