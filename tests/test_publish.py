"""`ci-tools publish` with a fake `flox` on PATH and real git checkouts (clean, dirty, unpushed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools import publish, results
from ci_tools.errors import FailedError, InputError
from ci_tools.results import PublishStatus
from ci_tools.retry import RetryPolicy

RESULTS = Path(__file__).parent / "data" / "results-cuda-12_9"
PASSED = "pytorch-python313-cpu-avx2"
PUBLISHED = "pytorch-python313-cuda12_9-sm90-avx512"
TEST_FAILED = "pytorch-python313-cuda12_9-sm89-avx2"
BUILD_FAILED = "torchvision-python313-cuda12_9-sm89-avx2"

# Each call takes the next line of the plan file: ok, transient or permanent (ok when empty).
FAKE_FLOX = """\
import json, os, pathlib, sys
with open(os.environ["FAKE_FLOX_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
plan = pathlib.Path(os.environ["FAKE_FLOX_PLAN"])
steps = plan.read_text().split()
plan.write_text(" ".join(steps[1:]))
step = steps[0] if steps else "ok"
if step == "transient":
    print("Uploading...\\nerror: 503 Service Unavailable: the catalog is busy")
    sys.exit(1)
if step == "permanent":
    print("error: package 'x' failed to build: builder failed with exit code 2")
    sys.exit(1)
print("Published.")
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A clone whose HEAD is pushed to its bare remote."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    _git(tmp_path, "clone", "-q", str(remote), str(work))
    (work / "README").write_text("builds\n")
    _git(work, "add", "README")
    _git(work, "commit", "-q", "-m", "first")
    _git(work, "push", "-q", "origin", "HEAD:main")
    return work


@pytest.fixture
def flox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A fake flox first on PATH; returns (plan file, argv log)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "flox"
    script.write_text(f"#!{sys.executable}\n{FAKE_FLOX}")
    script.chmod(0o755)
    plan, log = tmp_path / "flox-plan", tmp_path / "flox-log"
    plan.write_text("")
    log.write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_FLOX_PLAN", str(plan))
    monkeypatch.setenv("FAKE_FLOX_LOG", str(log))
    return plan, log


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    target = tmp_path / "results"
    shutil.copytree(RESULTS, target)
    return target


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _publish(
    names: list[str], results_dir: Path, cwd: Path, sleeps: list[float], attempts: int = 4
) -> list[str]:
    said: list[str] = []
    publish.run(
        names,
        org="acme",
        results_dir=results_dir,
        cwd=cwd,
        dry_run=False,
        policy=RetryPolicy(attempts=attempts, sleep=sleeps.append),
        say=said.append,
    )
    return said


def test_transient_failure_then_success(
    flox: tuple[Path, Path], checkout: Path, results_dir: Path
) -> None:
    plan, log = flox
    plan.write_text("transient ok")
    sleeps: list[float] = []

    _publish([PASSED], results_dir, checkout, sleeps)

    assert _calls(log) == [["publish", "-o", "acme", PASSED]] * 2
    assert len(sleeps) == 1
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None
    assert record.publish.status is PublishStatus.PUBLISHED
    assert record.publish.attempts == 2


def test_permanent_failure_is_not_retried(
    flox: tuple[Path, Path], checkout: Path, results_dir: Path
) -> None:
    plan, log = flox
    plan.write_text("permanent ok")
    sleeps: list[float] = []

    with pytest.raises(FailedError, match=f"{PASSED} \\(publish failed\\)"):
        _publish([PASSED], results_dir, checkout, sleeps)

    assert len(_calls(log)) == 1
    assert sleeps == []
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None and record.publish.status is PublishStatus.FAILED
    assert record.publish.detail.startswith("permanent after 1 attempt(s)")


def test_transient_failures_give_up_after_the_attempts(
    flox: tuple[Path, Path], checkout: Path, results_dir: Path
) -> None:
    plan, log = flox
    plan.write_text("transient transient transient ok")
    with pytest.raises(FailedError):
        _publish([PASSED], results_dir, checkout, [], attempts=3)
    assert len(_calls(log)) == 3
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None and "transient, gave up after 3" in record.publish.detail


def test_failed_variants_are_never_published(
    flox: tuple[Path, Path], checkout: Path, results_dir: Path
) -> None:
    _, log = flox
    with pytest.raises(FailedError) as caught:
        _publish([TEST_FAILED, PASSED, BUILD_FAILED], results_dir, checkout, [])
    assert _calls(log) == [["publish", "-o", "acme", PASSED]]
    assert f"{TEST_FAILED} (test failed)" in str(caught.value)
    assert f"{BUILD_FAILED} (build failed)" in str(caught.value)
    assert results.load(results.result_path(results_dir, TEST_FAILED)).publish is None


def test_missing_record_is_refused(flox: tuple[Path, Path], checkout: Path, tmp_path: Path) -> None:
    _, log = flox
    with pytest.raises(FailedError, match="no result record"):
        _publish([PASSED], tmp_path / "empty", checkout, [])
    assert _calls(log) == []


def test_rerun_skips_what_is_published(
    flox: tuple[Path, Path], checkout: Path, results_dir: Path
) -> None:
    _, log = flox
    said = _publish([PUBLISHED, PASSED], results_dir, checkout, [])
    assert _calls(log) == [["publish", "-o", "acme", PASSED]]
    assert f"{PUBLISHED}: already published to acme; skipped" in said
    _publish([PUBLISHED, PASSED], results_dir, checkout, [])
    assert len(_calls(log)) == 1


def test_dirty_checkout_is_refused(
    flox: tuple[Path, Path], checkout: Path, results_dir: Path
) -> None:
    _, log = flox
    (checkout / "README").write_text("edited\n")
    with pytest.raises(InputError, match=r"not clean.*\n\s+M README"):
        _publish([PASSED], results_dir, checkout, [])
    assert _calls(log) == []


def test_unpushed_commit_is_refused(
    flox: tuple[Path, Path], checkout: Path, results_dir: Path
) -> None:
    _, log = flox
    (checkout / "NEW").write_text("x\n")
    _git(checkout, "add", "NEW")
    _git(checkout, "commit", "-q", "-m", "local only")
    with pytest.raises(InputError, match=r"not on any remote branch.*git push"):
        _publish([PASSED], results_dir, checkout, [])
    assert _calls(log) == []


def test_not_a_git_checkout_is_refused(
    flox: tuple[Path, Path], tmp_path: Path, results_dir: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="not a git checkout"):
        _publish([PASSED], results_dir, plain, [])


@pytest.mark.parametrize(
    "output",
    ["error: 502 Bad Gateway", "curl: (28) Connection timed out", "API rate limit exceeded"],
)
def test_transient_messages(output: str) -> None:
    assert publish.is_transient(output)


def test_compile_error_is_permanent() -> None:
    assert not publish.is_transient("error: builder for '/nix/store/x.drv' failed with exit code 2")


@pytest.mark.parametrize("org", ["acme", "a", "flox-community", "A1-b2", "x" * 39])
def test_valid_orgs(org: str) -> None:
    assert publish.validate_org(org) == org


@pytest.mark.parametrize("org", ["", "-acme", "acme-", "a--b", "a_b", "a.b", "x" * 40, "a/b"])
def test_invalid_orgs(org: str) -> None:
    with pytest.raises(InputError, match="not a valid organisation name"):
        publish.validate_org(org)


# --- the command line ------------------------------------------------------------------------


def test_cli_dry_run_prints_and_writes_nothing(run_cli, results_dir: Path) -> None:  # type: ignore[no-untyped-def]
    before = {p.name: p.read_bytes() for p in results_dir.iterdir()}
    args = ("publish", PASSED, PUBLISHED, "--org", "acme", "--results", str(results_dir))
    done = run_cli(*args, "--branch", "cuda-12_9", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"would run: flox publish -o acme {PASSED}" in done.stdout
    assert f"{PUBLISHED}: already published" in done.stdout
    assert {p.name: p.read_bytes() for p in results_dir.iterdir()} == before


def test_cli_refuses_failed_variants_exit_1(run_cli, results_dir: Path) -> None:  # type: ignore[no-untyped-def]
    args = ("publish", TEST_FAILED, "--org", "acme", "--results", str(results_dir))
    done = run_cli(*args, "--branch", "cuda-12_9", "--dry-run")
    assert done.returncode == 1
    assert f"{TEST_FAILED} (test failed)" in done.stderr


def test_cli_invalid_org_exit_2(run_cli, results_dir: Path) -> None:  # type: ignore[no-untyped-def]
    done = run_cli("publish", PASSED, "--org=acme-", "--results", str(results_dir))
    assert done.returncode == 2
    assert "not a valid organisation name" in done.stderr


def test_cli_unknown_variant_exit_2(run_cli, results_dir: Path) -> None:  # type: ignore[no-untyped-def]
    args = ("publish", "pytorch-python313-cpu-avx3", "--org", "acme", "--branch", "cuda-12_9")
    done = run_cli(*args, "--results", str(results_dir))
    assert done.returncode == 2
    assert "closest: pytorch-python313-cpu-avx" in done.stderr


def test_cli_unknown_branch_exit_2(run_cli, results_dir: Path) -> None:  # type: ignore[no-untyped-def]
    done = run_cli("publish", PASSED, "--org", "acme", "--branch", "cuda-99")
    assert done.returncode == 2
    assert 'unknown branch "cuda-99"' in done.stderr


def test_cli_record_of_another_branch_exit_2(run_cli, results_dir: Path) -> None:  # type: ignore[no-untyped-def]
    done = run_cli(
        "publish", PASSED, "--org", "acme", "--branch", "main", "--results", str(results_dir)
    )
    assert done.returncode == 2
    assert "a record of branch cuda-12_9, not main" in done.stderr
