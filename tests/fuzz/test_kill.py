"""`kill -9` at random points of `generate` (issue 12 deliverable 4).

The output folder starts as the rendering of one branch and is regenerated for another, so a
run rewrites most files and deletes some. After each kill: without a committed journal the
folder is exactly the old one (the staging folder aside); the next `--check` names what the
killed run left; the next `generate` leaves exactly the new rendering, with no temp file and
no staging folder. A few trials run in the normal suite, many with CI_TOOLS_FUZZ=long.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from ci_tools.base import transaction

from . import harness

SHORT, LONG = 4, 40


def _generate(work: Path, branch: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ci_tools", "generate", "--branch", branch, "--out", "out", *extra],
        cwd=work,
        env={
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(harness.REPO_ROOT),
            "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(work: Path, branch: str, *extra: str) -> tuple[int, str]:
    process = _generate(work, branch, *extra)
    _, err = process.communicate(timeout=120)
    return process.returncode, err


def _state(out: Path) -> dict[str, bytes]:
    return harness.snapshot(out, skip=[out / transaction.STAGING])


def test_kill_9_during_generate(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed + 3)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(harness.REPO_ROOT / "catalog.yaml", work / "catalog.yaml")
    out = work / "out"
    # The two states: the rendering of cuda-12_9 (old) and of main (new).
    assert _finish(work, "main")[0] == 0
    new = _state(out)
    shutil.rmtree(out)
    assert _finish(work, "cuda-12_9")[0] == 0
    old = _state(out)
    assert old != new
    started = time.monotonic()
    assert _finish(work, "main")[0] == 0
    duration = time.monotonic() - started
    outcomes: Counter[str] = Counter()
    for trial in range(LONG if fuzz_long else SHORT):
        shutil.rmtree(out)
        assert _finish(work, "cuda-12_9")[0] == 0
        process = _generate(work, "main")
        if trial % 4 == 0:  # anywhere in the run
            time.sleep(duration * rng.random())
        else:  # inside the transaction: as soon as the staging folder appears, plus a little
            while process.poll() is None and not (out / transaction.STAGING).exists():
                time.sleep(0.001)
            time.sleep(rng.uniform(0, 0.08))
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
        staging = out / transaction.STAGING
        committed = (staging / "journal.json").is_file()
        state = _state(out)
        where = f"trial {trial} (seed {fuzz_seed + 3})"
        if state == old:
            outcomes[
                "nothing changed" + (" (killed while staging)" if staging.exists() else "")
            ] += 1
        elif state == new:
            outcomes[
                "killed after the last change" if not staging.exists() else "killed in cleanup"
            ] += 1
        else:
            # A mixed folder only ever exists behind a committed journal, and not for long:
            assert committed, f"{where}: mixed folder without a committed journal"
            outcomes["killed while renaming (journal committed)"] += 1
        if staging.exists() or list(out.glob(".*.tmp")):
            code, err = _finish(work, "main", "--check")
            assert code == 1 and "left by an interrupted generate" in err, f"{where}: {err}"
        code, err = _finish(work, "main")
        assert code == 0, f"{where}: {err}"
        assert _state(out) == new, f"{where}: the next run did not restore the new rendering"
        assert not staging.exists(), where
        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], where
        assert _finish(work, "main", "--check")[0] == 0, where
    with capsys.disabled():
        print(f"\nkill -9 of generate: {dict(outcomes)}")
