"""Real git repositories for tests: create, write, commit (no global or system git config)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "ci-tools tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "ci-tools tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git_env() -> dict[str, str]:
    """The process environment with the tests' git identity and no user or system config."""
    return {**os.environ, **_GIT_ENV}


def git(root: Path, *args: str) -> str:
    env = git_env()
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def init(root: Path, branch: str = "main") -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    return root


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def remove(root: Path, rel: str) -> None:
    (root / rel).unlink()


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")
