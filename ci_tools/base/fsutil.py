"""Writing files: never half-written, never outside the folder they belong in, never lost to
a full disk, never by two runs at once.

* `atomic_write_text`: a temporary file beside the target, renamed over it; created with the
  mode a plain `open` would give (0666 less the umask), not mkstemp's 0600.
* `confine`: where a path leads once the symlinks of its folder are resolved, refused unless
  that lies inside one of the given roots. Every write and delete of a transaction goes
  through it (`transaction.Transaction`).
* `reserve_space`: space set aside beside a file that must be written later (a build's
  record): when the disk is full by then, the reservation is given up and the write retried.
* `locked`: one run at a time on a folder (`flock` on the folder itself: nothing is created,
  and the lock dies with the process that held it).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ci_tools.base.errors import FailedError, InputError


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`.

    On a full disk, space reserved for `path` (`reserve_space`) is given up and the write
    tried once more; an error that remains names `path`."""
    try:
        _atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) and release_space(path):
            try:
                _atomic_write(path, text.encode("utf-8"))
                return
            except OSError as again:
                exc = again
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), file_mode())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def file_mode() -> int:
    """The mode `open()` gives a new file: 0666 less the process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


# --- confinement ---------------------------------------------------------------------------


def confine(path: Path, roots: Sequence[Path]) -> Path:
    """`path` with every symlink of its folder resolved, when that lies inside one of `roots`
    (resolved too); InputError otherwise. The last component is not followed: a rename or an
    unlink acts on a link itself, never on what it points to."""
    real = Path(os.path.realpath(path.parent)) / path.name
    for root in roots:
        top = Path(os.path.realpath(root))
        if real == top or top in real.parents:
            return real
    where = " or ".join(str(root) for root in roots)
    raise InputError(
        f"{path}: leads to {real} through a symbolic link, outside {where}; ci-tools writes "
        "and deletes only inside it: replace the link with a folder"
    )


# --- space set aside for a file that must be written later -----------------------------------


def _reservation(path: Path) -> Path:
    return path.with_name(f".{path.name}.reserve")


def reserve_space(path: Path, size: int) -> None:
    """Set `size` bytes aside beside `path` (allocated, not a sparse file)."""
    reservation = _reservation(path)
    # O_NOFOLLOW: a link planted under that name is refused, never written through.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(reservation, flags, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            os.write(fd, b"\0" * size)  # a file system without fallocate
    except OSError:
        os.close(fd)
        reservation.unlink(missing_ok=True)
        raise
    os.close(fd)


def release_space(path: Path) -> bool:
    """Give up the space set aside for `path`; whether there was any."""
    try:
        _reservation(path).unlink()
    except FileNotFoundError:
        return False
    return True


# --- one run at a time ---------------------------------------------------------------------


@contextlib.contextmanager
def locked(
    folder: Path,
    *,
    shared: bool = False,
    wait_seconds: float = 120.0,
    say: Callable[[str], None] = lambda _: None,
) -> Iterator[None]:
    """Hold a lock on `folder` (which must exist): exclusive to write, `shared` to read.

    A second run waits for the first (saying so once), up to `wait_seconds`, then fails
    (exit 1) naming the folder."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        deadline = time.monotonic() + wait_seconds
        waited = False
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise FailedError(
                        f"{folder}: another ci-tools run has been writing here for over "
                        f"{wait_seconds:.0f} s; let it finish (or stop it), then run again"
                    ) from None
                if not waited:
                    say(f"waiting for another ci-tools run to finish writing {folder}")
                    waited = True
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
