"""The build repository as ci-tools reads it: a checkout (a folder, in git or not) and its
trees, the files at one commit (through git: what is committed is what a runner builds) or,
outside git, the files of the folder.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ci_tools.base.gitrepo import GitRepo


@dataclass(frozen=True, kw_only=True)
class Tree:
    """The files of a build repository at one point: path (from its root) -> content id."""

    label: str  # for messages: "HEAD", "abc1234"
    files: Mapping[str, str]
    load: Callable[[Sequence[str]], Mapping[str, bytes]]  # contents by path
    # Symbolic links among `files` -> the file they lead to in the tree (followed link by
    # link, as Nix follows them), or None when that is outside the tree or nothing.
    links: Mapping[str, str | None] = field(default_factory=dict)
    # Contents by content id, where the trees of one repository share a store (git's): the
    # files of two commits are then read in one go.
    blobs: Callable[[Sequence[str]], Mapping[str, bytes]] | None = None

    def folders(self) -> dict[str, list[str]]:
        """folder -> every file below it (not to be changed); made once a tree: the
        prefetch and the fingerprints both ask."""
        return self._folders

    @cached_property
    def _folders(self) -> dict[str, list[str]]:
        return folder_index(self.files)


def git_tree(
    git: GitRepo, commit: str, prefix: str, label: str, *, checked_out: bool = False
) -> Tree:
    """The tree of `commit`; `prefix`: the build repository's folder inside git's, "" or "x/";
    `checked_out`: the working tree is at `commit` (HEAD), so its files that hold the
    committed bytes are read from it (`GitRepo.read_worktree`)."""
    listed, symlinks = git.entries(commit, prefix)
    blobs = {
        path.removeprefix(prefix): blob for path, blob in listed.items() if path.startswith(prefix)
    }

    def load(paths: Sequence[str]) -> Mapping[str, bytes]:
        if checked_out:
            git.read_worktree({prefix + p: blobs[p] for p in paths})
        data = git.blobs([blobs[p] for p in paths])
        return {p: data[blobs[p]] for p in paths}

    found = sorted(p.removeprefix(prefix) for p in symlinks if p.startswith(prefix))
    targets = {p: os.fsdecode(text) for p, text in load(found).items()} if found else {}
    return Tree(
        label=label,
        files=blobs,
        load=load,
        links=follow_links(targets, blobs),
        blobs=git.blobs,
    )


def dir_tree(root: Path) -> Tree:
    """The files of a folder that is not in git (a local run): content ids are sha256."""
    import hashlib  # only here: a checkout in git has git's ids

    files: dict[str, str] = {}
    targets: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():  # as git stores one: its target's text
                targets[rel] = str(path.readlink())
                files[rel] = hashlib.sha256(os.fsencode(targets[rel])).hexdigest()
            elif path.is_file():  # hashed as it is read: a huge file costs no memory
                with path.open("rb") as handle:
                    files[rel] = hashlib.file_digest(handle, "sha256").hexdigest()

    def load(paths: Sequence[str]) -> Mapping[str, bytes]:
        return {p: (root / p).read_bytes() for p in paths}

    return Tree(label=str(root), files=files, load=load, links=follow_links(targets, files))


_MAX_HOPS = 40  # as the kernel's and Nix's limits on a chain of links


def follow_links(targets: Mapping[str, str], files: Mapping[str, str]) -> dict[str, str | None]:
    """Each link -> the file its chain of links ends at in the tree, or None when it leaves
    the tree (an absolute target, too many `..`), ends at nothing, or loops."""
    return {link: _end_of_chain(link, targets, files) for link in targets}


def _end_of_chain(link: str, targets: Mapping[str, str], files: Mapping[str, str]) -> str | None:
    path = link
    for _ in range(_MAX_HOPS):
        target = targets[path]
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if target.startswith("/") or joined.split("/")[0] == "..":
            return None
        if joined not in targets:
            return joined if joined in files else None
        path = joined
    return None


@dataclass(frozen=True)
class Checkout:
    """A build repository: a folder, in git or not.

    Git is asked where the folder stands only when something needs it (`git`, `prefix`,
    `head`), so a matrix that needs neither the current branch nor a tree starts no process.
    """

    root: Path

    @cached_property
    def _where(self) -> tuple[GitRepo | None, str]:
        """Git's repository and the folder's path inside it ("" or "x/"); outside git (or
        before the first commit: nothing to read through git) no repository."""
        from ci_tools.base import proc
        from ci_tools.base.gitrepo import GitRepo

        if proc.which("git") is None:
            return None, ""
        where = GitRepo(root=self.root).locate()
        if where is None or where[1] is None:
            return None, ""
        rel = _relative(where[0], self.root)
        if rel is None:
            return None, ""
        return GitRepo(root=where[0]), "" if rel == "." else rel + "/"

    @property
    def git(self) -> GitRepo | None:
        return self._where[0]

    @property
    def prefix(self) -> str:
        """The build repository's folder inside git's: "" or "x/"."""
        return self._where[1]

    @cached_property
    def head(self) -> Tree:
        """The tree at HEAD, read once; its files from the working tree where they are the
        committed bytes."""
        if self.git is None:
            return dir_tree(self.root)
        return git_tree(self.git, "HEAD", self.prefix, "HEAD", checked_out=True)

    def tree(self, commit: str = "HEAD", label: str | None = None) -> Tree:
        if self.git is None:
            return dir_tree(self.root)
        return git_tree(self.git, commit, self.prefix, label or commit)

    def path_in_git(self, path: Path) -> str | None:
        if self.git is None:
            return None
        return _relative(self.git.root, path)


def _relative(root: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def folder_index(paths: Iterable[str]) -> dict[str, list[str]]:
    """folder -> every file path below it (at any depth)."""
    index: dict[str, list[str]] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            index.setdefault("/".join(parts[:depth]), []).append(path)
    return index
