"""`.ci/make-venv.py` says what it did on stderr: the quick start's stdout is only the matrix
(`python3 .ci/make-venv.py && ... && ci-tools matrix --branch main`; issue 30 item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / ".ci" / "make-venv.py"


def test_a_ready_venv_is_said_on_stderr_only(tmp_path: Path) -> None:
    # A venv whose python answers `-m pip --version`: the script keeps it.
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "venv")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "is ready" in done.stderr
