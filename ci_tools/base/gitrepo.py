"""The few git questions ci-tools asks, each one `git` call through `ci_tools.base.proc`.

Reads commits, never the working tree's uncommitted state, so a comparison REF..HEAD means
what the push means.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools.base import proc
from ci_tools.base.errors import InputError

_TIMEOUT = 120
_SYMLINK_MODE = "120000"
# The Nix files a fingerprint reads, all together: a real repository's are a few megabytes.
MAX_BLOBS_BYTES = 256 << 20
# A file larger than this is read from git, not from the working tree (a recipe is a few KB).
_MAX_WORKTREE_FILE = 1 << 20
# Object ids by length: SHA-1 repositories, and those made with --object-format=sha256.
_OBJECT_HASH = {40: "sha1", 64: "sha256"}


@dataclass(frozen=True, kw_only=True)
class GitRepo:
    root: Path
    # Blob contents by id, as read: a blob never changes, and a plan reads some twice (the
    # files `--since` looks through, then those it fingerprints).
    _read: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    def _git(self, *args: str) -> proc.CommandResult:
        result = proc.run(["git", *args], cwd=self.root, timeout=_TIMEOUT)
        if result.timed_out:
            raise InputError(f"`git {' '.join(args)}` in {self.root} took over {_TIMEOUT} s")
        if result.truncated:
            raise InputError(
                f"`git {' '.join(args)}` in {self.root} printed over {proc.MAX_OUTPUT} bytes"
            )
        return result

    def toplevel(self) -> Path | None:
        """The root of the working tree `root` lies in; None outside a git repository."""
        result = self._git("rev-parse", "--show-toplevel")
        return Path(result.stdout.strip()) if result.ok else None

    def locate(self) -> tuple[Path, str | None] | None:
        """One call for where a checkout stands: the top of its working tree and HEAD's
        commit (None before the first commit); None outside a git repository."""
        result = self._git("rev-parse", "--show-toplevel", "--verify", "--quiet", "HEAD")
        lines = result.stdout.splitlines()
        if not lines:
            return None
        return Path(lines[0]), (lines[1] if result.ok and len(lines) > 1 else None)

    def resolve_commit(self, ref: str) -> str | None:
        """The commit `ref` names, or None when this clone does not have it."""
        if ref.startswith("-"):
            return None
        result = self._git(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
        )
        return result.stdout.strip() if result.ok else None

    def changed_paths(
        self,
        base: str,
        head: str = "HEAD",
        *,
        ignore_lines: Sequence[str] = (),
    ) -> frozenset[str]:
        """Paths whose content differs between two commits; a rename counts as both paths.

        `ignore_lines`: regular expressions; a file whose every changed line matches one of
        them does not count (git's `-I`, git >= 2.30; POSIX extended syntax, matched
        against each line with its newline).
        """
        ignore = [f"--ignore-matching-lines={regex}" for regex in ignore_lines]
        result = self._git("diff", "--numstat", "--no-renames", "-z", *ignore, base, head, "--")
        if not result.ok:
            raise InputError(f"`git diff {base} {head}` failed: {result.stderr.strip()}")
        # Each record is "added<TAB>deleted<TAB>path".
        return frozenset(
            record.split("\t", 2)[2]
            for record in result.stdout.split("\0")
            if record.count("\t") >= 2
        )

    def show(self, commit: str, path: str) -> str | None:
        """The text of `path` at `commit`, or None when the commit has no such file."""
        result = self._git("show", f"{commit}:{path}")
        return result.stdout if result.ok else None

    def list_files(self, commit: str, directory: str) -> tuple[str, ...]:
        """Paths of the files directly inside `directory` at `commit`."""
        result = self._git("ls-tree", "--name-only", "-z", commit, "--", f"{directory}/")
        if not result.ok:
            return ()
        return tuple(p for p in result.stdout.split("\0") if p)

    def tree(self, commit: str, directory: str = "") -> dict[str, str]:
        """Every file at `commit` (under `directory`, a path from the top): path -> blob id."""
        return self.entries(commit, directory)[0]

    def entries(self, commit: str, directory: str = "") -> tuple[dict[str, str], frozenset[str]]:
        """`tree`, and which of its paths are symbolic links (mode 120000: the blob holds the
        link's target, not the file's content)."""
        args = ["ls-tree", "-r", "-z", "--full-tree", commit]
        if directory:
            args += ["--", directory.rstrip("/") + "/"]
        result = self._git(*args)
        if not result.ok:
            raise InputError(f"`git ls-tree {commit}` failed: {result.stderr.strip()}")
        out: dict[str, str] = {}
        links: set[str] = set()
        for record in result.stdout.split("\0"):
            meta, _, path = record.partition("\t")
            fields = meta.split()
            # Submodules are commits, not files: nothing of theirs is read.
            if len(fields) == 3 and fields[1] == "blob":
                out[path] = fields[2]
                if fields[0] == _SYMLINK_MODE:
                    links.add(path)
        return out, frozenset(links)

    def blobs(self, ids: Sequence[str]) -> dict[str, bytes]:
        """The contents of blobs, by id, from one `git cat-file --batch` (none when every
        one was read before)."""
        wanted = [blob for blob in dict.fromkeys(ids) if blob not in self._read]
        if wanted:
            self._read.update(self._cat(wanted))
        return {blob: self._read[blob] for blob in ids}

    def read_worktree(self, files: Mapping[str, str]) -> None:
        """Take the blobs of `files` (path from the repository's root -> blob id) from the
        working tree where it holds them: git's object id is a hash of the bytes, so a file
        whose bytes hash to its id is that blob, and costs no `git cat-file` (250 recipes:
        4 ms against 20). An edited, filtered (CRLF, LFS), large or missing file is read from
        git by `blobs`, as before: what is read is what is committed, never more."""
        for path, blob in files.items():
            if blob in self._read or len(blob) not in _OBJECT_HASH:
                continue
            data = _regular_file(self.root / path, _MAX_WORKTREE_FILE + 1)
            if data is not None and len(data) <= _MAX_WORKTREE_FILE and blob_id(data, blob) == blob:
                self._read[blob] = data

    def _cat(self, wanted: Sequence[str]) -> dict[str, bytes]:
        result = proc.run_bytes(
            ["git", "cat-file", "--batch"],
            cwd=self.root,
            stdin=("\n".join(wanted) + "\n").encode(),
            timeout=_TIMEOUT,
            max_output=MAX_BLOBS_BYTES,
        )
        if not result.ok:
            raise InputError(f"`git cat-file --batch` failed: {result.stderr.strip()}")
        if result.truncated:
            raise InputError(
                f"the {len(wanted)} files git was asked for hold over {MAX_BLOBS_BYTES} bytes: "
                "not the Nix files of a build repository"
            )
        out: dict[str, bytes] = {}
        data = result.stdout
        at = 0
        for blob in wanted:
            end = data.index(b"\n", at)
            header = data[at:end].split()
            at = end + 1
            if len(header) != 3:
                raise InputError(f"git has no object {blob}")
            size = int(header[2])
            out[blob] = data[at : at + size]
            at += size + 1
        return out

    def untracked(self, directory: str) -> tuple[str, ...]:
        """Files under `directory` git does not track and does not ignore."""
        result = self._git(
            "ls-files", "--others", "--exclude-standard", "-z", "--", directory.rstrip("/") + "/"
        )
        if not result.ok:
            return ()
        return tuple(p for p in result.stdout.split("\0") if p)

    def current_branch(self) -> str | None:
        """The checked-out branch; None when HEAD is detached or this is no repository."""
        result = self._git("symbolic-ref", "--quiet", "--short", "HEAD")
        return result.stdout.strip() or None if result.ok else None

    def recent_commits(self, head: str, count: int) -> tuple[tuple[str, int], ...]:
        """`head` and the commits it reaches, newest first, at most `count`, each with its
        number of parents: through every parent, so a merge commit (a pull request's, or
        one made by merging it) reaches the pull request's own commits."""
        result = self._git("rev-list", "--parents", f"--max-count={count}", head, "--")
        if not result.ok:
            raise InputError(f"`git rev-list {head}` failed: {result.stderr.strip()}")
        rows = (line.split() for line in result.stdout.splitlines())
        return tuple((row[0], len(row) - 1) for row in rows if row)


def blob_id(data: bytes, like: str) -> str | None:
    """The id git gives a blob of `data`, in the object format of the id `like` (SHA-1 or
    SHA-256, told by its length); None for an id of neither."""
    import hashlib  # only here: a plain matrix asks git for its branch, not for blobs

    algorithm = _OBJECT_HASH.get(len(like))
    if algorithm is None:
        return None
    digest = hashlib.new(algorithm, b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _regular_file(path: Path, limit: int) -> bytes | None:
    """Up to `limit` bytes of `path` when it is a regular file, not a link (an uncommitted
    change may have put a link to a FIFO or a device there: reading it could block); None
    when it is not, or cannot be read."""
    import stat  # only with read_worktree

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return None
            return handle.read(limit)
        except OSError:
            return None


def branch_from_env(env: Mapping[str, str]) -> str | None:
    """The branch a workflow run is about when its checkout has a detached HEAD.

    A `pull_request` run checks out a merge commit: its branch is the one it merges into
    (`GITHUB_BASE_REF`), else the one it comes from (`GITHUB_HEAD_REF`); a push names its
    branch in `GITHUB_REF` (`refs/heads/NAME`). GitHub documents all three under "Default
    environment variables".
    """
    for name in ("GITHUB_BASE_REF", "GITHUB_HEAD_REF"):
        value = env.get(name, "").strip()
        if value:
            return value
    ref = env.get("GITHUB_REF", "").strip()
    if ref.startswith("refs/heads/"):
        return ref.removeprefix("refs/heads/")
    return None
