"""checkout: what `flox publish` would refuse is refused first, each with what to do instead.
The scenarios in real pushed checkouts are in test_publish.py; these call the checks alone."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.ship import checkout


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_the_token_is_needed_in_ci_only() -> None:
    checkout.check_token({})
    checkout.check_token({"CI": "true", "FLOX_FLOXHUB_TOKEN": "secret"})
    with pytest.raises(InputError, match="FLOX_FLOXHUB_TOKEN is not set"):
        checkout.check_token({"CI": "true", "FLOX_FLOXHUB_TOKEN": ""})


def test_the_environment_must_open_and_be_locked(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"\.flox/env\.json is missing"):
        checkout.check_environment(tmp_path)
    (tmp_path / ".flox" / "env").mkdir(parents=True)
    (tmp_path / ".flox" / "env.json").write_text("{}")
    with pytest.raises(InputError, match=r"Run `flox list` in .*commit and push"):
        checkout.check_environment(tmp_path)
    (tmp_path / checkout.LOCKFILE).write_text("{}")
    checkout.check_environment(tmp_path)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_head_commit_needs_a_checkout_with_a_commit(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a git checkout"):
        checkout.head_commit(tmp_path)
    _git(tmp_path, "init", "-q")
    with pytest.raises(InputError, match="has no commit"):
        checkout.head_commit(tmp_path)
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "one")
    assert len(checkout.head_commit(tmp_path)) in (40, 64)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_branch_without_upstream_is_refused(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "one")
    with pytest.raises(InputError, match="not a branch with an upstream"):
        checkout.check_checkout(tmp_path)
    (tmp_path / "new.txt").write_text("x")
    with pytest.raises(InputError, match=r"not clean.*\n\s+\?\? new\.txt"):
        checkout.check_checkout(tmp_path)
