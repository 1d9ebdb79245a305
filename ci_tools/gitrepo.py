"""The few git questions ci-tools asks, each one `git` call through `ci_tools.proc`.

Reads commits, never the working tree's uncommitted state, so a comparison REF..HEAD means
what the push means.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tools import proc
from ci_tools.errors import InputError

_TIMEOUT = 120


@dataclass(frozen=True, kw_only=True)
class GitRepo:
    root: Path

    def _git(self, *args: str) -> proc.CommandResult:
        result = proc.run(["git", *args], cwd=self.root, timeout=_TIMEOUT)
        if result.timed_out:
            raise InputError(f"`git {' '.join(args)}` in {self.root} took over {_TIMEOUT} s")
        return result

    def toplevel(self) -> Path | None:
        """The root of the working tree `root` lies in; None outside a git repository."""
        result = self._git("rev-parse", "--show-toplevel")
        return Path(result.stdout.strip()) if result.ok else None

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
