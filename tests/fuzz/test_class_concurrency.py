"""The concurrency class (issue 20 item 9): several `generate` runs on one folder at once.

Each trial starts two to four runs together, each for a branch picked at random, with small
random delays, and now and then a `--check` among them; all run into the repository's
default folder, so the README and docs/reference.md are written too.

Invariants:
  C1 every writing run exits 0 (runs take turns) or 1 naming the folder it waited for; never
     2, never a traceback;
  C2 after all end, the folder is the rendering of exactly one branch that ran (its
     `--check` passes, the other branches' fail);
  C3 nothing is left behind: no staging folder, no temporary file;
  C4 a `--check` running beside them exits 0 or 1, never 2, and never reports what an
     interrupted generate leaves (it reads while no run writes).

Short mode (the normal suite): SHORT trials; CI_TOOLS_FUZZ=long: LONG trials.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ci_tools.base import transaction

from . import harness
from .classes import Table

SHORT, LONG = 1, 24
BRANCHES = ("main", "cuda-12_9", "cuda-13_0")


def _start(work: Path, argv: list[str], state: Path) -> subprocess.Popen[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(harness.REPO_ROOT),
        "XDG_STATE_HOME": str(state),
        "HOME": str(state),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "ci_tools", *argv],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_concurrent_generates_on_one_folder(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed + 22)
    table = Table("concurrency class: generate runs at once on one folder")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(harness.REPO_ROOT / "catalog.yaml", work / "catalog.yaml")
    shutil.copy(harness.REPO_ROOT / "README.md", work / "README.md")
    shutil.copytree(harness.REPO_ROOT / "docs", work / "docs")
    out = work / ".flox" / "pkgs"
    for trial in range(LONG if fuzz_long else SHORT):
        label = f"seed {fuzz_seed + 22} trial {trial}"
        writers = [rng.choice(BRANCHES) for _ in range(rng.randint(2, 4) if fuzz_long else 3)]
        checks = [rng.choice(BRANCHES)] if rng.random() < 0.5 or not fuzz_long else []
        runs: list[tuple[str, bool, subprocess.Popen[str]]] = []
        started = time.monotonic()
        for branch, check in [(b, False) for b in writers] + [(b, True) for b in checks]:
            argv = ["generate", "--branch", branch, *(["--check"] if check else [])]
            runs.append((branch, check, _start(work, argv, tmp_path / "state")))
            time.sleep(rng.uniform(0, 0.3))
        for branch, check, process in runs:
            _, err = process.communicate(timeout=600)
            kind = f"{'check' if check else 'generate'} x{len(writers)}"
            table.add(kind, process.returncode, time.monotonic() - started)
            where = f"[{label}] generate --branch {branch}{' --check' if check else ''}"
            assert "Traceback" not in err, f"{where}:\n{err}"
            if check:
                assert process.returncode in (0, 1), f"{where}: exit {process.returncode}\n{err}"
                assert "left by an interrupted generate" not in err, f"{where}:\n{err}"
                table.held["C4 a check beside them: 0/1, no half state"] += 1
            else:
                assert process.returncode == 0 or (
                    process.returncode == 1 and "another ci-tools run" in err
                ), f"{where}: exit {process.returncode}\n{err}"
                table.held["C1 writers: exit 0 (or 1 naming the folder)"] += 1
        current = [
            b
            for b in sorted(set(writers))
            if harness.run_inprocess(["generate", "--branch", b, "--check"], work).code == 0
        ]
        assert len(current) == 1, f"[{label}] the folder is the rendering of {current}"
        table.held["C2 the folder is one branch's rendering"] += 1
        assert not (out / transaction.STAGING).exists(), label
        assert not [p for p in out.rglob("*.tmp")], label
        table.held["C3 nothing left behind"] += 1
    with capsys.disabled():
        print("\n" + table.render())
