"""Generated files on disk: what differs from the rendering, and bringing the disk in line.

`generate` owns only files that carry the generated-file header **and** lie in a folder the
rendering writes to (not below it): it writes missing and stale ones, deletes generated ones
the catalog no longer produces, and never touches anything else; a file without the header
where the rendering puts one is reported instead.

Writing is one transaction (`transaction.Transaction`): every new file is staged in full
inside the output folder, a journal is committed, then the files are renamed into place. A run
killed before the commit leaves the folder as it was; one killed after it is finished by the
next run (`recover`), and only if a run on this machine wrote its journal. `--check` reports
what an interrupted run left behind. Every write and delete stays inside `roots` once symlinks
are resolved (`fsutil.confine`): the checkout for the default output folder, the folder itself
for one named with `--out`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ci_tools.base import bounded, fsutil, transaction
from ci_tools.base.errors import InputError
from ci_tools.render.recipes import RenderedFile, is_generated


@dataclass(frozen=True, kw_only=True)
class Plan:
    """How the output directory differs from the rendering; paths relative to `out_dir`."""

    out_dir: Path
    missing: tuple[RenderedFile, ...]
    stale: tuple[RenderedFile, ...]
    extra: tuple[str, ...]  # generated files the rendering no longer holds
    foreign: tuple[str, ...]  # files without the header where the rendering puts one
    unchanged: int
    leftovers: tuple[str, ...] = ()  # what an interrupted run left (staging, temp files)
    folders: tuple[str, ...] = ()  # where the rendering writes, relative to `out_dir`

    @property
    def current(self) -> bool:
        return not (self.missing or self.stale or self.extra or self.foreign or self.leftovers)


def plan(out_dir: Path, files: Iterable[RenderedFile]) -> Plan:
    files = tuple(files)
    _check_paths(files)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir}: not a folder")
    missing: list[RenderedFile] = []
    stale: list[RenderedFile] = []
    foreign: list[str] = []
    unchanged = 0
    wanted: set[str] = set()
    for file in files:
        wanted.add(file.path)
        existing = _read(out_dir / file.path)
        if existing is None:
            missing.append(file)
        elif existing == file.text:
            unchanged += 1
        elif is_generated(existing):
            stale.append(file)
        else:
            foreign.append(file.path)
    folders = write_folders(files)
    searched = tuple(dict.fromkeys((*folders, *retired_folders(folders))))
    extra = sorted(path for path in _generated_nix_files(out_dir, searched) if path not in wanted)
    return Plan(
        out_dir=out_dir,
        missing=tuple(missing),
        stale=tuple(stale),
        extra=tuple(extra),
        foreign=tuple(sorted(foreign)),
        unchanged=unchanged,
        leftovers=tuple(transaction.leftovers(out_dir, [out_dir / f for f in folders])),
        folders=folders,
    )


def write_folders(files: Sequence[RenderedFile]) -> tuple[str, ...]:
    """The folders (relative to the output folder) the rendering writes files into."""
    return tuple(sorted({PurePosixPath(f.path).parent.as_posix() for f in files}))


# Folders below a write folder where earlier versions of ci-tools rendered the shared
# builders (`.flox/pkgs/lib/`): flox lists every file there as a package (`lib.torch-cuda`), so
# the generated ones left behind are extra like any stale recipe.
RETIRED_SUBFOLDERS = ("lib",)


def retired_folders(folders: Sequence[str]) -> tuple[str, ...]:
    return tuple(
        (PurePosixPath(folder) / sub).as_posix() for folder in folders for sub in RETIRED_SUBFOLDERS
    )


def prepare(out_dir: Path, roots: Sequence[Path]) -> None:
    """The output folder, made if missing: only where it stays inside `roots`."""
    fsutil.confine(out_dir / transaction.STAGING, roots)
    out_dir.mkdir(parents=True, exist_ok=True)


def recover(out_dir: Path, files: Sequence[RenderedFile], roots: Sequence[Path]) -> list[str]:
    """Finish or undo what an interrupted run left in `out_dir`; say what was done."""
    folders = tuple(out_dir / folder for folder in write_folders(files))
    return transaction.Transaction(out_dir, folders, tuple(roots)).recover()


def apply(plan: Plan, also: Sequence[tuple[Path, str]] = (), roots: Sequence[Path] = ()) -> None:
    """Write missing and stale files (and `also`: other paths, e.g. the README), delete extra
    ones, all in one transaction, every path inside `roots` (default: the output folder).
    Refuses if a file is in the way."""
    if plan.foreign:
        listed = "\n".join(f"  {plan.out_dir / path}" for path in plan.foreign)
        raise InputError(
            "these files lack the generated-file header, so generate will not overwrite them; "
            f"move them away or delete them, then run generate again:\n{listed}"
        )
    rendered = [(plan.out_dir / f.path, f.text) for f in (*plan.missing, *plan.stale)]
    deletes = [plan.out_dir / path for path in plan.extra]
    folders = tuple(plan.out_dir / folder for folder in plan.folders)
    transaction.Transaction(plan.out_dir, folders, tuple(roots)).run([*rendered, *also], deletes)


def _check_paths(files: Sequence[RenderedFile]) -> None:
    """A rendered path stays inside the output folder (names come from the catalog)."""
    for file in files:
        parts = PurePosixPath(file.path).parts
        if not parts or file.path.startswith("/") or ".." in parts or "\\" in file.path:
            raise InputError(f'"{file.path}" would be written outside the output folder')


# A rendered file is a few kilobytes; one far larger is not ours.
MAX_FILE_BYTES = 1 << 20


def _read(path: Path) -> str | None:
    try:
        return bounded.read_text(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None
    except (UnicodeDecodeError, OSError):
        # A folder, FIFO, device, huge or unreadable file: not ours whatever it is, so it is
        # reported as in the way and never overwritten.
        return ""


def _generated_nix_files(out_dir: Path, folders: Iterable[str]) -> list[str]:
    """Generated `.nix` files directly in the folders the rendering writes to."""
    found = []
    for folder in folders:
        directory = out_dir / folder
        if not directory.is_dir():
            continue
        for path in directory.glob("*.nix"):
            if not path.is_file() or path.is_symlink():
                continue
            text = _read(path)
            if text is not None and is_generated(text):
                found.append(path.relative_to(out_dir).as_posix())
    return found
