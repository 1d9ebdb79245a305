"""`release --dry-run` previews the notes without network: `--offline`, or by itself when
GitHub cannot be reached; a name that does not resolve is tried twice, not for the whole
budget (issue 30 item 7: without network a dry run retried DNS for a minute)."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

import pytest
import requests

from ci_tools import cli
from ci_tools.base.github_transient import is_dns_failure
from ci_tools.commands import release as release_command
from tests.commands.test_release import COMMIT, CPU, TOKEN, _record, _save


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch, repo_root: Path) -> list[float]:
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ACTIONS", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/torch-builds")
    monkeypatch.setenv("GITHUB_SHA", COMMIT)
    monkeypatch.chdir(repo_root)
    waited: list[float] = []
    monkeypatch.setattr(
        release_command, "POLICY", dataclasses.replace(release_command.POLICY, sleep=waited.append)
    )
    return waited


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["release", "--branch", "main", "--org", "acme", *args])
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err and "Traceback" not in out.err
    return code, out.out, out.err


def _no_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name lookup fails as it does without network (EAI_NONAME)."""
    asked: list[str] = []

    def getaddrinfo(host: str, *_args: object, **_kwargs: object) -> list[object]:
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def test_offline_needs_no_token_and_asks_nothing(
    sleeps: list[float],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _no_dns(monkeypatch)
    folder = _save(tmp_path / "r", _record(CPU))
    code, out, err = _run(capsys, "--results", str(folder), "--dry-run", "--offline")
    assert code == 0, out + err
    assert asked == [] and sleeps == []
    assert "offline (--offline): nothing read from GitHub" in out
    assert f"`{CPU}`" in out  # the notes themselves
    assert "would create or update release main-1a2b3c4d5e6f" in out


def test_offline_is_for_dry_runs_only(
    sleeps: list[float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _save(tmp_path / "r", _record(CPU))
    code, _out, err = _run(capsys, "--results", str(folder), "--offline")
    assert code == 2 and "use it with --dry-run" in err


def test_a_dry_run_without_network_previews_after_one_retry(
    sleeps: list[float],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", "https://api.github.invalid")
    asked = _no_dns(monkeypatch)
    folder = _save(tmp_path / "r", _record(CPU))
    code, out, err = _run(capsys, "--results", str(folder), "--dry-run")
    assert code == 0, out + err
    assert asked == ["api.github.invalid"] * 2  # the first try and one retry
    assert len(sleeps) == 1
    assert "offline (GitHub cannot be reached (GitHub: open repository" in out
    assert f"`{CPU}`" in out


def test_a_real_release_without_network_fails(
    sleeps: list[float],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", "https://api.github.invalid")
    _no_dns(monkeypatch)
    folder = _save(tmp_path / "r", _record(CPU))
    code, out, err = _run(capsys, "--results", str(folder))
    assert code == 1
    assert "cannot reach https://api.github.invalid" in err
    assert "release notes:" not in out


def test_dns_failures_are_found_however_wrapped() -> None:
    lookup = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    wrapped = requests.ConnectionError(Exception("pool", lookup))
    assert is_dns_failure(wrapped)
    refused = requests.ConnectionError(ConnectionRefusedError(111, "Connection refused"))
    assert not is_dns_failure(refused)
