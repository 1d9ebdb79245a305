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
second commit costs only the files that differ, and `read_many` parses those of several
commits in the same call. A file Nix refuses to parse is read raw, and its error is kept for
the caller to report. A caller that knows early what it will read starts Nix on it then
(`begin`: the workflow's matrix, before its catalog loads), and reads the answer later.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import nixparse, proc
from ci_tools.base.errors import InputError
from ci_tools.plan.nixcanon import canonical_line

NIX_PARSER = nixparse.PARSER
# Linux's in-memory file system; tempfile makes a private folder in it (mode 0700).
_MEMORY = Path("/dev/shm")  # noqa: S108
_CHUNK = 400
_TIMEOUT = 300
Version = tuple[str, bytes]  # a file's repository path and content


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
        self._pending: _Pending | None = None
        self.parser_calls = 0

    @property
    def mode(self) -> str:
        return "nix-parse" if self.use_nix else "raw-bytes"

    def read(self, files: Mapping[str, bytes]) -> dict[str, NixFile]:
        """`files`: repository path -> content. Paths are relative to the repository root."""
        return self.read_many([files])[0]

    def begin(self, trees: Sequence[Mapping[str, bytes]]) -> None:
        """Start Nix on the files of `trees` now, for a `read_many` later: Nix parses while
        this process does other work (a plan loads its catalog). What it finds is kept as
        `read_many` would keep it; a file this start does not cover is read then, as always.
        One start at a time, of one chunk of files."""
        versions = (v for files in trees for v in files.items())
        todo = sorted(v for v in dict.fromkeys(versions) if v not in self._cache)
        if not self.use_nix or not todo or len(todo) > _CHUNK or self._pending is not None:
            return
        with contextlib.suppress(OSError):  # no room to write them: read when asked
            folder, batch = _lay_out(todo)
            try:
                started = nixparse.start(batch.names(), cwd=batch.top, timeout=_TIMEOUT)
            except InputError:  # not startable after all: the read will say why
                folder.cleanup()
                return
            self.parser_calls += 1
            self._pending = _Pending(folder=folder, batch=batch, started=started)

    def read_many(self, trees: Sequence[Mapping[str, bytes]]) -> list[dict[str, NixFile]]:
        """`read` for the files of several trees (commits) at once: what none of them had
        read before is parsed together, so two commits cost one start of Nix, not two (a
        start costs more than parsing 200 recipes)."""
        self._take_pending()
        todo = list(
            dict.fromkeys(
                version
                for files in trees
                for version in files.items()
                if version not in self._cache
            )
        )
        if todo:
            fresh = self._parse_all(todo) if self.use_nix else {}
            for version in todo:
                self._cache[version] = fresh.get(version) or _raw(*version, None)
        return [{path: self._cache[path, data] for path, data in files.items()} for files in trees]

    def close(self) -> None:
        """Stop a parse `begin` started that nothing asked for, and remove its files."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.started.stop()
            pending.folder.cleanup()

    def _take_pending(self) -> None:
        """What the parse `begin` started found, into the cache."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        batch = pending.batch
        with pending.folder:
            result = pending.started.result()
            first = _answer(nixparse.answer(result, cwd=batch.top, timeout=_TIMEOUT))
            found = self._parse_chunk(batch, first)
        for version in batch.versions:
            self._cache[version] = found.get(version) or _raw(*version, None)

    def _parse_all(self, todo: list[Version]) -> dict[Version, NixFile]:
        """The files written to a temporary folder, in memory where Linux has one (writing
        237 recipes to a busy disk's /tmp took 150 ms, to /dev/shm 12 ms), and parsed in
        chunks of `_CHUNK`."""
        folder, whole = _lay_out(todo)
        out: dict[Version, NixFile] = {}
        with folder:
            for at in range(0, len(whole.versions), _CHUNK):
                out.update(self._parse_chunk(whole.part(whole.versions[at : at + _CHUNK])))
        return out

    def _parse_chunk(
        self, batch: _Batch, first: tuple[list[str], str | None] | None = None
    ) -> dict[Version, NixFile]:
        """Parse `batch` in one call (`first`: its answer, where it was asked already). Nix
        stops at the first file it refuses, having printed the lines of those before it,
        and names that file in its error: those are kept, the refused one read raw, and the
        rest parsed in the next call, so each refused file costs one call more. A failure
        that names no file is split in halves instead."""
        out: dict[Version, NixFile] = {}
        rest = batch.versions
        while rest:
            lines, error = first if first is not None else self._parse(batch, rest)
            first = None
            if error is None:
                out.update({v: batch.parsed(v, line) for v, line in zip(rest, lines, strict=True)})
                return out
            done = len(lines)
            refused = rest[done] if done < len(rest) else None
            if refused is None or f"{batch.top}/{batch.name(refused)}:" not in error:
                if len(rest) == 1:
                    out[rest[0]] = batch.refused(rest[0], error)
                    return out
                half = len(rest) // 2
                out.update(self._parse_chunk(batch.part(rest[:half])))
                out.update(self._parse_chunk(batch.part(rest[half:])))
                return out
            out.update(
                {v: batch.parsed(v, line) for v, line in zip(rest[:done], lines, strict=True)}
            )
            out[refused] = batch.refused(refused, error)
            rest = rest[done + 1 :]
        return out

    def _parse(self, batch: _Batch, versions: list[Version]) -> tuple[list[str], str | None]:
        """The lines Nix printed, one a file from the first; and its error, None when it
        parsed them all."""
        self.parser_calls += 1
        paths = [batch.name(v) for v in versions]
        return _answer(nixparse.run(paths, cwd=batch.top, timeout=_TIMEOUT))


def _answer(result: proc.CommandResult) -> tuple[list[str], str | None]:
    """A parse's lines, and its error (None when it parsed every file it was given)."""
    lines = result.stdout.splitlines()
    asked = len(result.argv) - result.argv.index("--") - 1
    if result.truncated:  # a cut answer would misalign files and lines
        return [], result.stderr or "nix-instantiate --parse: its answer was cut"
    if not result.ok:
        return lines, result.stderr
    if len(lines) != asked:
        return [], f"nix-instantiate --parse printed {len(lines)} lines for {asked} files"
    return lines, None


def _lay_out(todo: list[Version]) -> tuple[tempfile.TemporaryDirectory[str], _Batch]:
    """`todo` written to a new temporary folder, in memory where Linux has one (a
    container's /dev/shm may be full: the disk then), each version of a path in a folder of
    its own (`r0-TAG/PATH`, `r1-TAG/PATH`: a file's path literals resolve against its own
    tree); the folder (to be removed) and the files as one batch, in the order parsed."""
    if _MEMORY.is_dir() and os.access(_MEMORY, os.W_OK):
        with contextlib.suppress(OSError):
            return _written(_MEMORY, todo)
    return _written(None, todo)


def _written(
    where: Path | None, todo: list[Version]
) -> tuple[tempfile.TemporaryDirectory[str], _Batch]:
    import secrets

    # Unguessable folder names: a literal that leaves the repository and comes back
    # through a guessed one (`../../r0/x.nix`) would be read as a file of the repository.
    tag = secrets.token_hex(8)
    layers: dict[str, int] = {}
    placed: dict[Version, str] = {}
    for path, data in todo:
        layers[path] = layers.get(path, -1) + 1
        placed[path, data] = f"r{layers[path]}-{tag}"
    folder = tempfile.TemporaryDirectory(prefix="ci-tools-nix-", dir=where)
    try:
        top = Path(folder.name).resolve()
        for name in sorted({posixpath.dirname(f"{placed[v]}/{v[0]}") for v in todo}):
            (top / name).mkdir(parents=True, exist_ok=True)  # once a folder, not a file
        for (path, data), layer in placed.items():
            (top / layer / path).write_bytes(data)
    except BaseException:
        folder.cleanup()
        raise
    ordered = sorted(todo, key=lambda v: (placed[v], v[0]))
    return folder, _Batch(top, placed, ordered)


@dataclass(frozen=True, kw_only=True)
class _Pending:
    """A parse `NixReader.begin` started: its files' folder, and Nix at work on them."""

    folder: tempfile.TemporaryDirectory[str]
    batch: _Batch
    started: proc.Running


@dataclass(frozen=True)
class _Batch:
    """Versions parsed in one call: each lies at `top/<its folder>/<its path>`."""

    top: Path
    placed: Mapping[Version, str]  # version -> its folder under `top`
    versions: list[Version]

    def name(self, version: Version) -> str:
        return f"{self.placed[version]}/{version[0]}"

    def names(self) -> list[str]:
        return [self.name(v) for v in self.versions]

    def part(self, versions: list[Version]) -> _Batch:
        return _Batch(self.top, self.placed, versions)

    def parsed(self, version: Version, line: str) -> NixFile:
        return _parsed(self.top / self.placed[version], version[0], line)

    def refused(self, version: Version, error: str) -> NixFile:
        return _raw(*version, _first_error(self.top / self.placed[version], error))


def _first_error(root: Path, stderr: str) -> str:
    """The first line of Nix's error, with the temporary folder left out of its paths."""
    text = stderr.replace(str(root) + "/", "").strip()
    lines = text.splitlines()
    errors = [line for line in lines if line.startswith("error")]
    return (errors or lines or ["nix-instantiate --parse failed"])[0]


def _parsed(root: Path, path: str, line: str) -> NixFile:
    prefix = str(root)
    text, paths = canonical_line(line)
    # Paths print absolute: make them relative to the repository so the text is the same
    # wherever it was parsed; one that climbs out of it lands in the temporary folder, named
    # at random: that part reads as the folder above the repository (`/..`).
    outside = str(root.parent)
    normalised = (
        text.replace(prefix + "/", "/")
        .replace(prefix, "/")
        .replace(outside + "/", "/../")
        .replace(outside, "/..")
    )
    refs = {p[len(prefix) + 1 :] for p in paths if p.startswith(prefix + "/")}
    references = tuple(sorted(r for r in refs if r and r != path))
    return NixFile(
        digest="nix:" + hashlib.sha256(normalised.encode()).hexdigest(),
        references=references,
        parsed=True,
        in_code=references,
    )


def _raw(path: str, data: bytes, error: str | None) -> NixFile:
    # Imported here: with Nix only a file it refuses is read raw, and the raw lexer's
    # expressions cost a start that never needs them.
    from ci_tools.plan.nixraw import raw_references

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
