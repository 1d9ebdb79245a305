"""One transaction for a set of files: written and deleted as one step, or not at all."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base.errors import InputError

STAGING = ".ci-tools-staging"
_JOURNAL = "journal.json"
# What `atomic_write_text` leaves when killed between mkstemp and rename: `.NAME.XXXXXXXX.tmp`.
_TEMP = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")


def leftovers(out_dir: Path, folders: Iterable[Path]) -> list[str]:
    """What an interrupted write left in `out_dir`: its staging folder, stray temp files."""
    found = []
    if (out_dir / STAGING).exists():
        found.append(str(out_dir / STAGING))
    for folder in dict.fromkeys([out_dir, *folders]):
        if folder.is_dir():
            found.extend(str(p) for p in sorted(folder.iterdir()) if _is_temp(p))
    return found


def _is_temp(path: Path) -> bool:
    return bool(_TEMP.fullmatch(path.name)) and path.is_file() and not path.is_symlink()


@dataclass(frozen=True)
class Transaction:
    """Write and delete a set of files under `root` as one step.

    Every new file is written in full into `root/.ci-tools-staging/` first; then a journal
    naming them is renamed into place (the commit point); then the files are renamed over
    their targets and the deletions done. Killed before the commit, the staging folder is
    simply removed by the next run: nothing changed. Killed after it, the next run finishes
    the journal (each step is idempotent). Renames within one file system are atomic.
    """

    root: Path
    # The folders the files go to: where stray temp files of a killed run are looked for.
    folders: tuple[Path, ...] = ()

    def run(self, writes: Sequence[tuple[Path, str]], deletes: Sequence[Path]) -> list[str]:
        recovered = self.recover()
        # Encode everything before touching the disk: a lone surrogate fails here, not halfway.
        encoded: list[tuple[Path, bytes]] = []
        for target, text in writes:
            try:
                encoded.append((target, text.encode("utf-8")))
            except UnicodeEncodeError as exc:
                raise InputError(f"{target}: cannot be written as UTF-8: {exc.reason}") from None
        if not encoded and not deletes:
            return recovered
        for target, _ in encoded:
            _check_writable(target)
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / STAGING
        staging.mkdir()
        try:
            entries = []
            for index, (target, data) in enumerate(encoded):
                name = f"{index}.new"
                _write_synced(staging / name, data)
                entries.append([name, os.path.relpath(target, self.root)])
            journal = {
                "writes": entries,
                "deletes": [os.path.relpath(path, self.root) for path in deletes],
            }
            _write_synced(staging / f"{_JOURNAL}.tmp", json.dumps(journal).encode())
            (staging / f"{_JOURNAL}.tmp").replace(staging / _JOURNAL)
            _sync_dir(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self._finish(staging)
        return recovered

    def recover(self) -> list[str]:
        """Finish or undo what an interrupted run left; say what was done."""
        done = []
        staging = self.root / STAGING
        if staging.is_dir() and not staging.is_symlink():
            if (staging / _JOURNAL).is_file():
                count = self._finish(staging)
                done.append(f"finished an interrupted generate ({count} files)")
            else:
                shutil.rmtree(staging)
                done.append(f"removed {staging} (an interrupted generate; nothing had changed)")
        elif staging.exists() or staging.is_symlink():
            staging.unlink()
            done.append(f"removed {staging}")
        for stray in leftovers(self.root, self.folders):
            Path(stray).unlink()
            done.append(f"removed the stray temporary file {stray}")
        return done

    def _finish(self, staging: Path) -> int:
        journal = json.loads((staging / _JOURNAL).read_text(encoding="utf-8"))
        touched: set[Path] = set()
        for name, relative in journal["writes"]:
            source, target = staging / name, self.root / relative
            if source.exists():  # absent: already renamed by the interrupted run
                target.parent.mkdir(parents=True, exist_ok=True)
                source.replace(target)
                touched.add(target.parent)
        for relative in journal["deletes"]:
            target = self.root / relative
            target.unlink(missing_ok=True)
            touched.add(target.parent)
        for folder in touched:
            _sync_dir(folder)
        (staging / _JOURNAL).unlink()
        shutil.rmtree(staging)
        return len(journal["writes"]) + len(journal["deletes"])


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
