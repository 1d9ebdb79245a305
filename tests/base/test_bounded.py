"""ci_tools.base.bounded: every input read within a bound, whatever the input is."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ci_tools.base import bounded, capture, linecapture


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert bounded.read_bytes(path, 100) == b"x" * 100


def test_a_file_over_the_limit_is_refused_after_reading_only_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 101)
    with pytest.raises(bounded.RefusedInput, match="larger than 100 bytes"):
        bounded.read_bytes(path, 100)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_that_never_ends_is_refused_at_once(device: str) -> None:
    with pytest.raises(bounded.RefusedInput, match="not a regular file"):
        bounded.read_bytes(Path(device), 1 << 30)


def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "x.result.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(bounded.RefusedInput, match="not a regular file"):
        bounded.read_text(link, 1 << 30)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            bounded.read_bytes(fifo, 100)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "the read of a FIFO blocked"
    assert isinstance(outcome[0], bounded.RefusedInput)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(bounded.RefusedInput, match="not a regular file"):
        bounded.read_bytes(tmp_path, 100)


def test_proc_files_are_regular_and_read(tmp_path: Path) -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc here")
    assert b"Name:" in bounded.read_bytes(Path("/proc/self/status"), 1 << 20)


def test_lines_are_cut_as_they_arrive_and_say_how_much() -> None:
    lines = linecapture.Lines(max_line=10)
    out = [*lines.feed(b"short\n" + b"y" * 25), *lines.feed(b"y" * 5 + b"\nnext"), *lines.close()]
    assert out == ["short", "y" * 10 + capture.cut_marker(20), "next"]


def test_lines_read_line_breaks_as_text_mode_does() -> None:
    lines = linecapture.Lines(max_line=100)
    out = [*lines.feed(b"a\r\nb\rc\r"), *lines.feed(b"\nd\n"), *lines.close()]
    assert out == ["a", "b", "c", "d"]


def test_head_keeps_the_first_bytes_and_counts_the_rest() -> None:
    head = capture.Head(limit=4)
    head.feed(b"abc")
    head.feed(b"defg")
    assert (bytes(head.kept), head.dropped) == (b"abcd", 3)


def test_tail_text_keeps_the_end_from_a_line_start() -> None:
    text = "\n".join(f"line {n}" for n in range(1000))
    kept = bounded.tail_text(text, 100)
    assert len(kept.encode()) <= 100 + 40
    assert kept.startswith("[... ") and kept.endswith("line 999")
    assert kept.split("\n")[1].startswith("line ")
    assert bounded.tail_text("small", 100) == "small"


def test_shorten_cuts_only_long_lines() -> None:
    assert bounded.shorten("a\nb", 5) == "a\nb"
    assert bounded.shorten("x" * 12 + "\nok", 5) == "xxxxx [... 7 characters cut]\nok"
