"""Generated files on disk: what differs from the rendering, and bringing the disk in line.

`generate` owns only files that carry the generated-file header. It writes missing and stale
ones, deletes generated ones the catalog no longer produces, and never touches a file without
the header: one in the way is reported instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ci_tools import fsutil
from ci_tools.errors import InputError
from ci_tools.render import RenderedFile, is_generated


@dataclass(frozen=True, kw_only=True)
class Plan:
    """How the output directory differs from the rendering; paths relative to `out_dir`."""

    out_dir: Path
    missing: tuple[RenderedFile, ...]
    stale: tuple[RenderedFile, ...]
    extra: tuple[str, ...]  # generated files the rendering no longer holds
    foreign: tuple[str, ...]  # files without the header where the rendering puts one
    unchanged: int

    @property
    def current(self) -> bool:
        return not (self.missing or self.stale or self.extra or self.foreign)


def plan(out_dir: Path, files: Iterable[RenderedFile]) -> Plan:
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
    extra = sorted(path for path in _generated_nix_files(out_dir) if path not in wanted)
    return Plan(
        out_dir=out_dir,
        missing=tuple(missing),
        stale=tuple(stale),
        extra=tuple(extra),
        foreign=tuple(sorted(foreign)),
        unchanged=unchanged,
    )


def apply(plan: Plan) -> None:
    """Write missing and stale files, then delete extra ones. Refuses if a file is in the way."""
    if plan.foreign:
        listed = "\n".join(f"  {plan.out_dir / path}" for path in plan.foreign)
        raise InputError(
            "these files lack the generated-file header, so generate will not overwrite them; "
            f"move them away or delete them, then run generate again:\n{listed}"
        )
    for file in (*plan.missing, *plan.stale):
        fsutil.atomic_write_text(plan.out_dir / file.path, file.text)
    for path in plan.extra:
        (plan.out_dir / path).unlink()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (UnicodeDecodeError, IsADirectoryError):
        return ""  # not ours whatever it is: reported as in the way, never overwritten


def _generated_nix_files(out_dir: Path) -> list[str]:
    if not out_dir.is_dir():
        return []
    found = []
    for path in out_dir.rglob("*.nix"):
        text = _read(path)
        if path.is_file() and text is not None and is_generated(text):
            found.append(path.relative_to(out_dir).as_posix())
    return found
