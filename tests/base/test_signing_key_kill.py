"""The cache's signing key is never on disk, however the process that signs ends (issue 29
item 6): a `ci-tools` process killed with SIGKILL while `nix store sign` runs leaves no file
holding the key under TMPDIR (it once left $TMPDIR/ci-tools-key-*/signing-key behind).

A stand-in `nix` on PATH blocks as a long signing does; it records what it was handed, so the
test also shows the key reached it (through its standard input), not only that it is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ci_tools

KEY = "fleet-cache-1:" + "Q" * 86 + "=="
ROOT = Path(ci_tools.__file__).resolve().parent.parent

# Blocks until killed, as `nix store sign` over a large closure does; first it says its pid
# and reads the key the way Nix does, from the --key-file it is given.
FAKE_NIX = """#!/bin/sh
key=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--key-file" ]; then key="$2"; fi
  shift
done
cat "$key" > "$SEEN"
echo $$ > "$MARK.part" && mv "$MARK.part" "$MARK"
exec sleep 600
"""

SIGNER = """
import os
from ci_tools.base import nixcache
nixcache.push(["/nix/store/" + "a" * 32 + "-top"], "file:///nowhere", os.environ["KEY"],
              env=dict(os.environ))
"""


def _wait_for(path: Path, child: subprocess.Popen[bytes]) -> None:
    """Until the stand-in says it is signing (a condition, not a timing: bounded only so that
    a broken run ends)."""
    for _ in range(1200):
        if path.exists() or child.poll() is not None:
            return
        time.sleep(0.05)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_no_key_file_is_left_after_kill_9(tmp_path: Path) -> None:
    tmpdir, bin_dir = tmp_path / "tmp", tmp_path / "bin"
    tmpdir.mkdir()
    bin_dir.mkdir()
    nix = bin_dir / "nix"
    nix.write_text(FAKE_NIX)
    nix.chmod(0o755)
    mark, seen = tmp_path / "signing.pid", tmp_path / "seen"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "TMPDIR": str(tmpdir),
        "PYTHONPATH": str(ROOT),
        "KEY": KEY,
        "MARK": str(mark),
        "SEEN": str(seen),
    }
    child = subprocess.Popen([sys.executable, "-c", SIGNER], env=env)
    try:
        _wait_for(mark, child)
        assert mark.exists(), f"the signing never started (exit {child.poll()})"
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if mark.exists():
            # The stand-in, orphaned by the kill: ended by its own pid.
            os.kill(int(mark.read_text()), signal.SIGKILL)
    assert seen.read_text().strip() == KEY  # Nix was handed the key
    secret = KEY.partition(":")[2]
    left = [p for p in tmpdir.rglob("*") if p.is_file() and secret in p.read_text(errors="replace")]
    assert left == [], f"the key is left on disk: {left}"
    assert not list(tmpdir.rglob("*key*"))
