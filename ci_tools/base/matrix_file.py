"""A matrix as `ci-tools matrix` prints it, read back from a file: `report --planned` and
`release` read the variants a run planned from it, `mark-green --shard` the entries of one
shard (`{"include": [entries]}`, the workflow's `matrix` input). Pure but for `read_text`.

Only the fields its readers use are read; each must be what `matrix` writes, else an
InputError names the file and the entry (`FILE: include[3].packages: ...`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_tools.base import bounded
from ci_tools.base.errors import InputError

VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
# A plan is a matrix of at most a few thousand entries: a few hundred kilobytes.
MAX_BYTES = 8 << 20


@dataclass(frozen=True, kw_only=True)
class FileEntry:
    """One entry of the file, with what is known of it; a field it lacks is None."""

    where: str  # FILE: include[N], for messages
    branch: str
    packages: tuple[str, ...]
    name: Any  # as the file has it: checked by the reader that needs it
    fingerprint: Any


def read_text(path: Path, option: str) -> str:
    """The file (a regular file, bounded in size), or an InputError naming `option`."""
    try:
        return bounded.read_text(path, MAX_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{option} {path}: cannot read it: {exc}") from None


def parse(text: str, source: str) -> list[FileEntry]:
    """The entries of the matrix in `text`; each has a branch and a non-empty list of
    variant names."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{source}: not a matrix as `ci-tools matrix` prints it: {exc}") from None
    entries = data.get("include") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise InputError(f'{source}: a matrix needs an "include" list of entries')
    return [_entry(entry, f"{source}: include[{index}]") for index, entry in enumerate(entries)]


def _entry(entry: Any, where: str) -> FileEntry:
    if not isinstance(entry, dict):
        raise InputError(f"{where}: must be an object")
    branch, packages = entry.get("branch"), entry.get("packages")
    if not isinstance(branch, str) or not branch:
        raise InputError(f"{where}.branch: must be a branch name, not {branch!r}")
    if not isinstance(packages, list) or not packages:
        raise InputError(f"{where}.packages: must be a list of variant names")
    for name in packages:
        if not isinstance(name, str) or not VARIANT_NAME.fullmatch(name):
            raise InputError(f"{where}.packages: {name!r} is not a variant name")
    return FileEntry(
        where=where,
        branch=branch,
        packages=tuple(packages),
        name=entry.get("name"),
        fingerprint=entry.get("fingerprint"),
    )
