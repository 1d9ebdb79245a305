"""The runners' preflight script is a thin caller of `ci-tools preflight` (its own tests are
tests/build/test_runner_check.py), kept while the workflows run it by path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.act.harness import REPO_ROOT

SCRIPT = REPO_ROOT / ".github" / "scripts" / "preflight.py"


def test_the_script_passes_its_arguments_to_ci_tools_preflight(tmp_path: Path) -> None:
    (tmp_path / "runners.yaml").write_text("preflight:\n  min_free_gb: lots\n")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--inventory", str(tmp_path / "runners.yaml")],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "preflight.min_free_gb must be a whole number" in done.stderr
