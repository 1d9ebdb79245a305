"""The stand-in actions refuse what the real ones refuse (sources in tests/act/actions/standin.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.act.harness import STANDIN, git


def action(which: str, tmp: Path, **inputs: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ACT_ARTIFACTS": str(tmp / "store"),
        "GITHUB_WORKSPACE": str(tmp / "ws"),
        "RUNNER_TEMP": str(tmp / "rt"),
        "GITHUB_PATH": str(tmp / "path"),
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
    }
    (tmp / "ws").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(STANDIN), which], env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "a.result.json").write_text("{}")
    (folder / ".hidden").write_text("x")
    return folder


def test_upload_to_an_existing_name_fails_without_overwrite(tmp_path: Path, results: Path) -> None:
    assert action("upload-artifact", tmp_path, name="results-x", path=str(results)).returncode == 0
    again = action("upload-artifact", tmp_path, name="results-x", path=str(results))
    assert again.returncode == 1
    assert "(409) Conflict" in again.stdout
    (results / "a.result.json").write_text('{"v": 2}')
    replaced = action(
        "upload-artifact", tmp_path, name="results-x", path=str(results), overwrite="true"
    )
    assert replaced.returncode == 0
    assert json.loads((tmp_path / "store" / "results-x" / "a.result.json").read_text()) == {"v": 2}
    assert not (tmp_path / "store" / "results-x" / ".hidden").exists()


def test_upload_of_nothing_follows_if_no_files_found(tmp_path: Path) -> None:
    missing = str(tmp_path / "none")
    assert "::warning::" in action("upload-artifact", tmp_path, name="a", path=missing).stdout
    assert (
        action(
            "upload-artifact", tmp_path, name="a", path=missing, if_no_files_found="error"
        ).returncode
        == 1
    )
    assert not (tmp_path / "store" / "a").exists()


def test_download_by_pattern_merged_or_per_artifact_and_by_missing_name(
    tmp_path: Path, results: Path
) -> None:
    for name in ("results-a", "results-b", "planned"):
        assert action("upload-artifact", tmp_path, name=name, path=str(results)).returncode == 0
    merged = tmp_path / "merged"
    action(
        "download-artifact", tmp_path, pattern="results-*", path=str(merged), merge_multiple="true"
    )
    assert sorted(p.name for p in merged.iterdir()) == ["a.result.json"]
    apart = tmp_path / "apart"
    action("download-artifact", tmp_path, pattern="results-*", path=str(apart))
    assert sorted(p.name for p in apart.iterdir()) == ["results-a", "results-b"]
    missing = action("download-artifact", tmp_path, name="nope", path=str(apart))
    assert missing.returncode == 1
    assert "Artifact not found for name: nope" in missing.stdout


def test_checkout_of_a_commit_a_branch_and_all_history(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    git(
        src, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "1"
    )
    first = git(src, "rev-parse", "HEAD")
    git(
        src, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "2"
    )
    tip = git(src, "rev-parse", "HEAD")
    env = {"ACT_STANDIN_ORIGIN": str(src), "EVENT_REF": "refs/heads/main", "EVENT_SHA": first}
    os.environ.update(env)
    try:
        assert action("checkout", tmp_path).returncode == 0
        assert git(tmp_path / "ws", "rev-parse", "HEAD") == first  # the event's commit
        assert git(tmp_path / "ws", "rev-parse", "--abbrev-ref", "HEAD") == "main"
        assert action("checkout", tmp_path, ref="main").returncode == 0
        assert git(tmp_path / "ws", "rev-parse", "HEAD") == tip  # the branch's tip
        assert git(tmp_path / "ws", "rev-list", "--count", "HEAD") == "1"  # depth 1
        assert action("checkout", tmp_path, ref=first, fetch_depth="0").returncode == 0
        assert git(tmp_path / "ws", "rev-parse", "HEAD") == first
        assert git(tmp_path / "ws", "rev-parse", "origin/main") == tip  # all branches
    finally:
        for key in env:
            del os.environ[key]


def test_setup_python_refuses_a_version_this_machine_lacks(tmp_path: Path) -> None:
    (tmp_path / "rt").mkdir()
    wrong = action("setup-python", tmp_path, python_version="2.7")
    assert wrong.returncode == 1
    assert "Python 2.7 requested" in wrong.stdout
    have = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert action("setup-python", tmp_path, python_version=have).returncode == 0
    assert (tmp_path / "path").read_text().strip().endswith("setup-python/bin")
