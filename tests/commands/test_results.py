"""The records `build` writes, whatever the build's log and disk do (issue 20 items 4 and 12):
a log of huge lines is stored as a bounded tail that every reader accepts, a disk that fills
up during the build still takes the record of a passed build, and records get the usual mode.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.build import flox_build, results
from ci_tools.build.results import Status
from tests.build import fakeflox
from tests.conftest import CliRunner

VARIANT = "pytorch-python313-cpu-avx2"


@pytest.fixture
def flox_env(tmp_path: Path) -> dict[str, str]:
    return fakeflox.env(tmp_path)


def _build(run_cli: CliRunner, repo_root: Path, cwd: Path, env: dict[str, str], out: Path) -> str:
    catalog = str(repo_root / "catalog.yaml")
    result = run_cli("build", "--catalog", catalog, "--branch", "main", VARIANT, "--results",
                     str(out), cwd=cwd, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_a_log_of_huge_lines_makes_a_small_record_every_reader_accepts(
    run_cli: CliRunner, repo_root: Path, tmp_path: Path, flox_env: dict[str, str]
) -> None:
    """Item 4: 80 lines of 200 kB made an 11.8 MB record that report, test, publish and
    release refused (exit 2): the build's outcome was lost."""
    out = tmp_path / "out"
    stdout = _build(run_cli, repo_root, tmp_path, {**flox_env, "FAKE_FLOX_FLOOD": "80x200000"}, out)
    assert len(stdout) < 3 << 20  # the live log cuts each line too
    path = results.result_path(out, VARIANT)
    assert path.stat().st_size < flox_build.LOG_TAIL_BYTES + 4096
    record = results.load(path)
    assert record.build is not None and record.build.status is Status.PASSED
    assert "bytes cut]" in record.build.log_tail
    report = run_cli("report", str(out), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert [p.name for p in out.iterdir()] == [path.name]  # the reserved space was given back


def test_records_and_reports_get_the_mode_of_a_plain_open(
    run_cli: CliRunner, repo_root: Path, tmp_path: Path, flox_env: dict[str, str]
) -> None:
    """Item 12: records and report files were created 0600."""
    out = tmp_path / "out"
    old = os.umask(0o022)
    try:
        _build(run_cli, repo_root, tmp_path, flox_env, out)
        summary = tmp_path / "summary.json"
        assert run_cli("report", str(out), "--json", str(summary), cwd=tmp_path).returncode == 0
    finally:
        os.umask(old)
    for path in (results.result_path(out, VARIANT), summary):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _namespaces_work(), reason="needs unprivileged user namespaces")
def test_a_disk_that_fills_up_during_the_build_keeps_the_passed_record(
    repo_root: Path, tmp_path: Path, flox_env: dict[str, str]
) -> None:
    """Item 12: a full disk mid-build recorded a passed build as "started", and the error
    omitted the path. A real full disk: a 4 MiB tmpfs in a private mount namespace."""
    out = tmp_path / "out"
    out.mkdir()
    # Only the tools the script needs: Nix refuses its store inside a user namespace.
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("sh", "mount", "cat", "ls"):
        (tools / tool).symlink_to(shutil.which(tool) or tool)
    env = {
        **os.environ,
        **flox_env,
        "PATH": f"{flox_env['PATH'].split(os.pathsep)[0]}{os.pathsep}{tools}",
        "PYTHONPATH": str(repo_root),
        "FAKE_FLOX_FILL": str(out / "filler"),
    }
    build = [sys.executable, "-m", "ci_tools", "build", "--catalog", str(repo_root / "catalog.yaml"),
             "--branch", "main", VARIANT, "--results", str(out)]  # fmt: skip
    script = (
        f'mount -t tmpfs -o size=4m tmpfs "{out}" && "$@"; echo "exit $?"; '
        f'cat "{results.result_path(out, VARIANT)}"; ls -a "{out}"'
    )
    done = subprocess.run(
        [shutil.which("unshare") or "unshare", "-rm", "sh", "-c", script, "sh", *build],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert "exit 0\n" in done.stdout, done.stdout + done.stderr
    text = done.stdout.split("exit 0\n", 1)[1]
    record = json.loads(text[: text.rindex("}") + 1])
    assert record["build"]["status"] == "passed"
    assert f".{VARIANT}.result.json.reserve" not in text  # given back when used, or after
