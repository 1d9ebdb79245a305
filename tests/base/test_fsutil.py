"""ci_tools.base.fsutil: atomic writes with the usual mode, confinement, reserved space, locks."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ci_tools.base import fsutil
from ci_tools.base.errors import FailedError, InputError


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_written_file_has_the_mode_open_would_give(tmp_path: Path, umask: int, mode: int) -> None:
    """Issue 20 item 12: records and reports were created 0600 (mkstemp's mode)."""
    before = os.umask(umask)
    try:
        fsutil.atomic_write_text(tmp_path / "r.json", "{}\n")
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == mode


def test_confine_accepts_paths_inside_and_refuses_a_folder_that_leads_out(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "lib").symlink_to(outside)
    assert fsutil.confine(root / "sub" / "a.nix", [root]) == root.resolve() / "sub" / "a.nix"
    with pytest.raises(InputError, match=r"lib/a\.nix: leads to .*outside.*through a symbolic"):
        fsutil.confine(root / "lib" / "a.nix", [root])
    assert fsutil.confine(root / "lib" / "a.nix", [root, outside]).parent == outside.resolve()


def test_confine_does_not_follow_the_last_component(tmp_path: Path) -> None:
    """A rename over a link, or an unlink, acts on the link: it may point anywhere."""
    (tmp_path / "link.nix").symlink_to("/etc/passwd")
    assert fsutil.confine(tmp_path / "link.nix", [tmp_path]).name == "link.nix"


def test_confine_resolves_dot_dot_and_absolute_paths(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    with pytest.raises(InputError, match="outside"):
        fsutil.confine(tmp_path / "root" / ".." / "x", [tmp_path / "root"])
    with pytest.raises(InputError, match="outside"):
        fsutil.confine(tmp_path / "root" / "/etc/x", [tmp_path / "root"])


def _failing_once(monkeypatch: pytest.MonkeyPatch, code: int) -> list[Path]:
    real = fsutil._atomic_write
    calls: list[Path] = []

    def write(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise OSError(code, os.strerror(code))
        real(path, data)

    monkeypatch.setattr(fsutil, "_atomic_write", write)
    return calls


def test_a_full_disk_gives_up_the_reservation_and_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.result.json"
    fsutil.reserve_space(path, 4096)
    assert (tmp_path / ".x.result.json.reserve").stat().st_size == 4096
    calls = _failing_once(monkeypatch, errno.ENOSPC)
    fsutil.atomic_write_text(path, "passed\n")
    assert len(calls) == 2
    assert path.read_text(encoding="utf-8") == "passed\n"
    assert not (tmp_path / ".x.result.json.reserve").exists()


def test_a_full_disk_without_a_reservation_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 item 12: the error of a full disk omitted the path."""
    _failing_once(monkeypatch, errno.ENOSPC)
    with pytest.raises(OSError, match="No space left") as info:
        fsutil.atomic_write_text(tmp_path / "x.result.json", "x")
    assert info.value.filename == str(tmp_path / "x.result.json")


def test_another_error_does_not_spend_the_reservation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.result.json"
    fsutil.reserve_space(path, 4096)
    _failing_once(monkeypatch, errno.EIO)
    with pytest.raises(OSError):
        fsutil.atomic_write_text(path, "x")
    assert fsutil.release_space(path)


def test_a_second_writer_waits_for_the_first(tmp_path: Path) -> None:
    said: list[str] = []
    order: list[str] = []
    with fsutil.locked(tmp_path):

        def second() -> None:
            with fsutil.locked(tmp_path, say=said.append):
                order.append("second")

        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.3)
        order.append("first done")
    thread.join(timeout=10)
    assert order == ["first done", "second"]
    assert said == [f"waiting for another ci-tools run to finish writing {tmp_path}"]


def test_a_lock_held_too_long_fails_with_exit_1_naming_the_folder(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with (
            pytest.raises(FailedError, match=f"{tmp_path}: another ci-tools run"),
            fsutil.locked(tmp_path, wait_seconds=0.3),
        ):
            pass
        with (  # a reader waits for a writer too
            pytest.raises(FailedError),
            fsutil.locked(tmp_path, shared=True, wait_seconds=0.3),
        ):
            pass
    finally:
        holder.kill()
        holder.communicate()
    with fsutil.locked(tmp_path, wait_seconds=5):  # the lock died with its holder
        pass
