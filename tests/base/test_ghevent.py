"""The event payload (GITHUB_EVENT_PATH) is read only from a regular file (issue 29, item 7):
a FIFO would block the read forever, a device never ends. Each case runs in a child process
with a deadline, so a read that blocks fails the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, CliRunner

HEAD = "a" * 40
READ = (
    "import sys\n"
    "from ci_tools.base import ghevent\n"
    "print(ghevent.pull_request_head({'GITHUB_EVENT_NAME': 'pull_request',"
    " 'GITHUB_EVENT_PATH': sys.argv[1]}))\n"
)


def _read(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", READ, str(path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "event.json"
    os.mkfifo(fifo)
    return fifo


def test_regular_event_file_is_read(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"sha": HEAD}}}), encoding="utf-8")
    done = _read(event)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == HEAD


def test_missing_event_file_is_no_event(tmp_path: Path) -> None:
    done = _read(tmp_path / "absent.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_event_path_that_is_no_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = {"fifo": _fifo(tmp_path), "folder": tmp_path, "device": Path("/dev/zero")}[kind]
    from ci_tools.base import ghevent
    from ci_tools.base.errors import InputError

    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(path)}
    if kind == "fifo":  # in-process only once it cannot block (the child proves that first)
        done = _read(Path(env["GITHUB_EVENT_PATH"]))
        assert "InputError" in done.stderr, done.stderr
    with pytest.raises(InputError, match=r"GITHUB_EVENT_PATH=.*: not a regular file"):
        ghevent.pull_request_head(env)


def test_mark_green_over_a_fifo_event_exits_2(tmp_path: Path, run_cli: CliRunner) -> None:
    shard = tmp_path / "shard.json"
    shard.write_text('{"include": []}', encoding="utf-8")
    results = tmp_path / "results"
    results.mkdir()
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(_fifo(tmp_path))}
    args = ("mark-green", "--shard", str(shard), "--results-root", str(results))
    done = run_cli(*args, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr
