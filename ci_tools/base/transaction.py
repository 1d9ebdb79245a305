"""One transaction for a set of files: written and deleted as one step, or not at all.

Every new file is written in full into `root/.ci-tools-staging/` first; then a journal naming
them is renamed into place (the commit point); then the files are renamed over their targets
and the deletions done. Killed before the commit, the staging folder is simply removed by the
next run: nothing changed. Killed after it, the next run finishes the journal (each step is
idempotent). Renames within one file system are atomic.

A journal is obeyed only if a run of ci-tools on this machine wrote it, and only inside the
roots the caller names. The journal holds a random nonce; before committing it, the run
records the nonce and the staging folder's real path in a witness file outside any checkout
(`witness_dir`). A journal found without its witness (committed to a repository, copied in
from elsewhere) is removed unread; one with its witness still has every path checked
(`fsutil.confine`) before anything is renamed or deleted.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_tools.base import bounded, fsutil
from ci_tools.base.errors import InputError

STAGING = ".ci-tools-staging"
_JOURNAL = "journal.json"
_MAX_JOURNAL_BYTES = 4 << 20
_NONCE = re.compile(r"[0-9a-f]{32}")
_STAGED = re.compile(r"[0-9]{1,9}\.new")
# What `atomic_write_text` leaves when killed between mkstemp and rename: `.NAME.XXXXXXXX.tmp`.
_TEMP = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")


def witness_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where runs record the journals they wrote: the user's state folder, outside any
    checkout (`$XDG_STATE_HOME/ci-tools/journals`, else `~/.local/state/ci-tools/journals`)."""
    env = os.environ if env is None else env
    state = Path(env.get("XDG_STATE_HOME", ""))
    if not state.is_absolute():  # unset, or relative: the XDG spec says to ignore it
        state = Path("~").expanduser() / ".local" / "state"
    return state / "ci-tools" / "journals"


def leftovers(out_dir: Path, folders: Iterable[Path]) -> list[str]:
    """What an interrupted write left in `out_dir`: its staging folder, stray temp files."""
    found = []
    if (out_dir / STAGING).exists() or (out_dir / STAGING).is_symlink():
        found.append(str(out_dir / STAGING))
    for folder in dict.fromkeys([out_dir, *folders]):
        if folder.is_dir():
            found.extend(str(p) for p in sorted(folder.iterdir()) if _is_temp(p))
    return found


def _is_temp(path: Path) -> bool:
    return bool(_TEMP.fullmatch(path.name)) and path.is_file() and not path.is_symlink()


@dataclass(frozen=True)
class Transaction:
    """Write and delete a set of files under `root` as one step (see the module's notes).

    `roots`: where the files may lie once symlinks are resolved (default: `root` itself).
    `folders`: where stray temp files of a killed run are looked for.
    """

    root: Path
    folders: tuple[Path, ...] = ()
    roots: tuple[Path, ...] = ()

    @property
    def _roots(self) -> tuple[Path, ...]:
        return self.roots or (self.root,)

    def run(self, writes: Sequence[tuple[Path, str]], deletes: Sequence[Path]) -> None:
        # Encode everything before touching the disk: a lone surrogate fails here, not halfway.
        encoded: list[tuple[Path, bytes]] = []
        for target, text in writes:
            try:
                encoded.append((target, text.encode("utf-8")))
            except UnicodeEncodeError as exc:
                raise InputError(f"{target}: cannot be written as UTF-8: {exc.reason}") from None
        if not encoded and not deletes:
            return
        fsutil.confine(self.root / STAGING, self._roots)
        for target in [*(t for t, _ in encoded), *deletes]:
            fsutil.confine(target, self._roots)
        for target, _ in encoded:
            _check_writable(target)
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / STAGING
        staging.mkdir()
        nonce = secrets.token_hex(16)
        witness = witness_dir() / nonce
        try:
            entries = []
            for index, (target, data) in enumerate(encoded):
                name = f"{index}.new"
                _write_synced(staging / name, data)
                entries.append([name, os.path.relpath(target, self.root)])
            journal = {
                "nonce": nonce,
                "writes": entries,
                "deletes": [os.path.relpath(path, self.root) for path in deletes],
            }
            _write_synced(staging / f"{_JOURNAL}.tmp", json.dumps(journal).encode())
            _witness(witness, staging)
            (staging / f"{_JOURNAL}.tmp").replace(staging / _JOURNAL)
            _sync_dir(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            witness.unlink(missing_ok=True)
            raise
        self._finish(staging, journal, witness)

    def recover(self) -> list[str]:
        """Finish or undo what an interrupted run left; say what was done."""
        done = []
        staging = self.root / STAGING
        if staging.is_dir() and not staging.is_symlink():
            fsutil.confine(staging, self._roots)
            trusted = self._trusted(staging)
            if trusted is not None:
                count = self._finish(staging, *trusted)
                done.append(f"finished an interrupted generate ({count} files)")
            elif (staging / _JOURNAL).exists():
                shutil.rmtree(staging)
                done.append(
                    f"removed {staging} without obeying its journal: no ci-tools run on this "
                    "machine wrote it (was it committed to the repository?)"
                )
            else:
                shutil.rmtree(staging)
                done.append(f"removed {staging} (an interrupted generate; nothing had changed)")
        elif staging.exists() or staging.is_symlink():
            fsutil.confine(staging, self._roots).unlink()
            done.append(f"removed {staging}")
        for stray in leftovers(self.root, self.folders):
            fsutil.confine(Path(stray), self._roots).unlink()
            done.append(f"removed the stray temporary file {stray}")
        return done

    def _trusted(self, staging: Path) -> tuple[dict[str, Any], Path] | None:
        """The journal in `staging` and its witness, when a run on this machine wrote it
        there and every path in it stays inside the roots; None otherwise."""
        try:
            journal = json.loads(bounded.read_text(staging / _JOURNAL, _MAX_JOURNAL_BYTES))
            nonce = journal["nonce"]
            if not isinstance(nonce, str) or not _NONCE.fullmatch(nonce):
                return None
            witness = witness_dir() / nonce
            if bounded.read_text(witness, 4096) != os.path.realpath(staging):
                return None
            for name, relative in journal["writes"]:
                if not _STAGED.fullmatch(name):
                    return None
                fsutil.confine(self.root / relative, self._roots)
            for relative in journal["deletes"]:
                fsutil.confine(self.root / relative, self._roots)
        except (OSError, ValueError, KeyError, TypeError, InputError):
            return None
        return journal, witness

    def _finish(self, staging: Path, journal: dict[str, Any], witness: Path) -> int:
        touched: set[Path] = set()
        writes: list[tuple[str, str]] = [(name, rel) for name, rel in journal["writes"]]
        deletes: list[str] = journal["deletes"]
        for name, relative in writes:
            source = staging / name
            target = fsutil.confine(self.root / relative, self._roots)
            if source.exists():  # absent: already renamed by the interrupted run
                target.parent.mkdir(parents=True, exist_ok=True)
                source.replace(target)
                touched.add(target.parent)
        for relative in deletes:
            target = fsutil.confine(self.root / relative, self._roots)
            target.unlink(missing_ok=True)
            touched.add(target.parent)
        for folder in touched:
            _sync_dir(folder)
        (staging / _JOURNAL).unlink()
        shutil.rmtree(staging)
        witness.unlink(missing_ok=True)
        return len(writes) + len(deletes)


def _witness(witness: Path, staging: Path) -> None:
    """Record, outside the checkout, that this run is about to commit `staging`'s journal."""
    try:
        witness.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_synced(witness, os.path.realpath(staging).encode())
    except OSError as exc:
        raise InputError(
            f"{witness.parent}: cannot record the journal of this run there "
            f"({exc.strerror or exc}); set XDG_STATE_HOME to a folder ci-tools may write"
        ) from None


def _check_writable(target: Path) -> None:
    """Refuse before the commit what would fail after it: a file where a folder must be,
    a folder that cannot be written."""
    if target.is_dir():
        raise InputError(f"{target}: is a folder; generate writes a file there")
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"{ancestor}: is not a folder; cannot write {target}")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"{ancestor}: cannot be written (permission denied)")


def _write_synced(path: Path, data: bytes) -> None:
    with path.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
