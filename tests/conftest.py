"""Fixtures shared by every test module."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.model import Catalog
from tests import skips

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS = REPO_ROOT / "tests"
DATA = TESTS / "data"
GOLDEN = TESTS / "golden"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """With `-n`, xdist's default `load` hands tests out one by one, so a module-scoped
    fixture several tests share (an act scenario's run: tests/act) is built again on every
    worker that gets one of them. `loadgroup` keeps the tests of one `xdist_group` on one
    worker and hands out the rest as `load` does."""
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Every skip's reason, on the controller too under xdist (workers' reports come back)."""
    if report.skipped and isinstance(report.longrepr, tuple):
        _skipped.append(f"{report.nodeid}: {report.longrepr[2]}")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped whole (`pytest.importorskip`) is a skip too."""
    if report.skipped and isinstance(report.longrepr, tuple):
        _skipped.append(f"{report.nodeid}: {report.longrepr[2]}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI, a skip other than the root-only case fails the run (tests/skips.py)."""
    if not skips.strict() or hasattr(session.config, "workerinput"):
        return
    unexpected = skips.unexpected(_skipped)
    if unexpected:
        session.config.get_terminal_writer().line(
            "CI skipped what it must run (install the tool in .ci/run):\n  "
            + "\n  ".join(unexpected),
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _private_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test's own XDG_STATE_HOME, where generate records the journals it writes
    (`transaction.witness_dir`): no test sees another's, none writes to the real home."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(REPO_ROOT / "catalog.yaml", display_name="catalog.yaml")


CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli() -> CliRunner:
    """Run `ci-tools ARGS...` as a separate process, as a user would, from this checkout."""

    def runner(
        *args: str,
        cwd: Path = REPO_ROOT,
        env: dict[str, str] | None = None,
        extra_path: Sequence[Path] = (),
        timeout: float = 600,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        full_env.pop("GH_TOKEN", None)
        full_env["PYTHONPATH"] = str(REPO_ROOT)
        if extra_path:
            full_env["PATH"] = os.pathsep.join([*map(str, extra_path), full_env.get("PATH", "")])
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "ci_tools", *args],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return runner
