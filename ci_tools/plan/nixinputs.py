"""Nix files as Nix: their normalised text and the files they reference.

Two versions of a Nix file are equal when Nix's own parser says so: `nix-instantiate --parse`
prints the expression without comments or layout but with every string's content (a `#`
line inside a `''...''` string is string content, and stays). Without `nix-instantiate`
the raw bytes stand in: any byte change counts, never the other way round.

References are every path literal (`import ./x.nix`, `callPackage ../y {}`, `src = ./p.patch`,
`./dir` meaning `dir/default.nix` or the whole folder): the parser prints each one as an
absolute path, resolved against the file's own folder, so it is read from the parse, not
guessed from text. A path with an interpolation (`./pkgs/${name}.nix`) stands for its whole
folder. Without Nix the raw text's `./` and `../` literals are references, comments and
strings included: more references, never fewer (`nixraw`, which also says which sit in code).

Cost: the files are written once to a temporary folder and parsed by one `nix-instantiate`
per `_CHUNK` files (it prints one line per file); results are cached by (path, content), so a
second commit costs only the files that differ. A file Nix refuses to parse is read raw,
and its error is kept for the caller to report.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import proc
from ci_tools.plan.nixraw import raw_references

NIX_PARSER = "nix-instantiate"
# Linux's in-memory file system; tempfile makes a private folder in it (mode 0700).
_MEMORY = Path("/dev/shm")  # noqa: S108
_CHUNK = 400
_TIMEOUT = 300


@dataclass(frozen=True, kw_only=True)
class NixFile:
    """What a Nix file contributes to a fingerprint."""

    digest: str  # sha256 of the normalised text, prefixed by how it was normalised
    references: tuple[str, ...]  # repository paths; a trailing "/" means the whole folder
    error: str | None = None  # why Nix could not parse it (then `digest` is of the raw bytes)
    parsed: bool = False  # the references come from Nix's parse, not from the raw text
    # The references that are path literals in code (all of a parse's; of the raw text's,
    # those outside comments and strings); None: unknown (the raw text does not lex).
    in_code: tuple[str, ...] | None = None


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
        """The files written to a temporary folder, in memory where Linux has one (writing
        237 recipes to a busy disk's /tmp took 150 ms, to /dev/shm 12 ms), and parsed."""
        if _MEMORY.is_dir() and os.access(_MEMORY, os.W_OK):
            with contextlib.suppress(OSError):  # full (a container's 64 MB): the disk then
                return self._parse_in(_MEMORY, files)
        return self._parse_in(None, files)

    def _parse_in(self, where: Path | None, files: Mapping[str, bytes]) -> dict[str, NixFile]:
        import tempfile  # only when there is something to parse

        out: dict[str, NixFile] = {}
        with tempfile.TemporaryDirectory(prefix="ci-tools-nix-", dir=where) as tmp:
            root = Path(tmp).resolve() / "r"
            for folder in sorted({posixpath.dirname(path) for path in files}):
                (root / folder).mkdir(parents=True, exist_ok=True)  # once a folder, not a file
            for path, data in files.items():
                (root / path).write_bytes(data)
            paths = sorted(files)
            for start in range(0, len(paths), _CHUNK):
                chunk = paths[start : start + _CHUNK]
                out.update(self._parse_chunk(root, chunk, files))
        return out

    def _parse_chunk(
        self, root: Path, chunk: list[str], files: Mapping[str, bytes]
    ) -> dict[str, NixFile]:
        """Parse `chunk` in one call. Nix stops at the first file it refuses, having printed
        the lines of those before it, and names that file in its error: those are kept, the
        refused one read raw, and the rest parsed in the next call, so each refused file
        costs one call more. A failure that names no file is split in halves instead."""
        out: dict[str, NixFile] = {}
        rest = chunk
        while rest:
            lines, error = self._parse(root, rest)
            if error is None:
                out.update({p: _parsed(root, p, line) for p, line in zip(rest, lines, strict=True)})
                return out
            done = len(lines)
            refused = rest[done] if done < len(rest) else None
            if refused is None or f"{root}/{refused}:" not in error:
                if len(rest) == 1:
                    out[rest[0]] = _raw(rest[0], files[rest[0]], _first_error(root, error))
                    return out
                half = len(rest) // 2
                out.update(self._parse_chunk(root, rest[:half], files))
                out.update(self._parse_chunk(root, rest[half:], files))
                return out
            out.update(
                {p: _parsed(root, p, line) for p, line in zip(rest[:done], lines, strict=True)}
            )
            out[refused] = _raw(refused, files[refused], _first_error(root, error))
            rest = rest[done + 1 :]
        return out

    def _parse(self, root: Path, paths: list[str]) -> tuple[list[str], str | None]:
        """The lines Nix printed, one a file from the first; and its error, None when it
        parsed them all."""
        self.parser_calls += 1
        result = proc.run([NIX_PARSER, "--parse", "--", *paths], cwd=root, timeout=_TIMEOUT)
        lines = result.stdout.splitlines()
        if result.truncated:  # a cut answer would misalign files and lines
            return [], result.stderr or "nix-instantiate --parse: its answer was cut"
        if not result.ok:
            return lines, result.stderr
        if len(lines) != len(paths):
            return [], f"nix-instantiate --parse printed {len(lines)} lines for {len(paths)} files"
        return lines, None


def _first_error(root: Path, stderr: str) -> str:
    """The first line of Nix's error, with the temporary folder left out of its paths."""
    text = stderr.replace(str(root) + "/", "").strip()
    lines = text.splitlines()
    errors = [line for line in lines if line.startswith("error")]
    return (errors or lines or ["nix-instantiate --parse failed"])[0]


def _parsed(root: Path, path: str, line: str) -> NixFile:
    prefix = str(root)
    canon = _Canon(line)
    text = canon.run()
    # Paths print absolute: make them relative to the repository so the text is the same
    # wherever it was parsed.
    normalised = text.replace(prefix + "/", "/").replace(prefix, "/")
    refs = {p[len(prefix) + 1 :] for p in canon.paths if p.startswith(prefix + "/")}
    references = tuple(sorted(r for r in refs if r and r != path))
    return NixFile(
        digest="nix:" + hashlib.sha256(normalised.encode()).hexdigest(),
        references=references,
        parsed=True,
        in_code=references,
    )


def canonical(text: str) -> str:
    """`--parse` output with every attribute set's bindings, every `let`'s bindings and every
    function's formals in sorted order.

    Nix 2.8 prints them in the order of its symbol table (`Symbol` compares by address), so
    the same file prints differently after other files were parsed in the same process.
    Their order carries no meaning (Nix keeps them in maps), so sorting them loses nothing:
    two texts are equal after this exactly when Nix's trees are equal.
    """
    return _Canon(text).run()


# The only places the printed grammar's structure can change: escapes and interpolations in
# strings, brackets, separators, and `let ... in`. Everything between is copied as is.
_TOKENS = re.compile(r'\\.|\$\{|[{}()\[\];,"]|(?<![A-Za-z0-9_\'-])(?:let|in) ')
_SPLIT = re.compile(f"({_TOKENS.pattern})")  # the text between tokens, and the tokens
_CLOSE = {"(": ")", "[": "]", "{": "}"}
# A path as `--parse` prints it: absolute, outside string literals.
_PRINTED_PATH = re.compile(r"(?<![A-Za-z0-9_'\-.])/[A-Za-z0-9._+\-/]+")


class _Canon:
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


def _raw(path: str, data: bytes, error: str | None) -> NixFile:
    found = raw_references(path, data.decode("utf-8", "replace"))
    return NixFile(
        digest="raw:" + hashlib.sha256(data).hexdigest(),
        references=found.every,
        error=error,
        in_code=found.in_code,
    )


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
