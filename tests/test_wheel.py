"""The wheel carries everything ci-tools reads of its own (issue 30 item 1).

Built from a copy of this checkout's package, installed into a fresh virtualenv (no site
packages; the dependencies come from this one's site-packages through a .pth, which adds the
folder without running its .pth files, so this checkout's editable install is not seen), and
run from a folder that holds only a catalog: `generate`, `page` and `preflight` work there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Without PYTHONPATH, which would put this checkout's package before the installed one."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def build_wheel(src: Path, dist: Path) -> Path:
    """This checkout's wheel, built in DIST from a copy in SRC, so the build's own folders
    never land in the checkout (the act scenario of an adopting repository installs it too)."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, src / name)
    shutil.copytree(
        REPO_ROOT / "ci_tools", src / "ci_tools", ignore=shutil.ignore_patterns("__pycache__")
    )
    pip = [sys.executable, "-m", "pip"]
    done = _run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), "."], src
    )
    assert done.returncode == 0, done.stderr
    (built,) = dist.glob("ci_tools-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed; its bin/ folder."""
    venv = tmp_path_factory.mktemp("venv")
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], venv).returncode == 0
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    done = _run([*pip, "--no-deps", "--no-index", str(wheel)], venv)
    assert done.returncode == 0, done.stderr
    site = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], venv
    )
    (Path(site.stdout.strip()) / "ci_tools_deps.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    return venv / "bin"


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    """A template or schema added without its package-data line fails here."""
    shipped = set(zipfile.ZipFile(wheel).namelist())
    package = {
        p.relative_to(REPO_ROOT).as_posix()
        for p in (REPO_ROOT / "ci_tools").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert package - shipped == set()


def test_the_installed_commands_run_outside_this_checkout(installed: Path, tmp_path: Path) -> None:
    adopter = tmp_path / "adopter"
    adopter.mkdir()
    shutil.copy(REPO_ROOT / "catalog.yaml", adopter)
    where = _run(
        [str(installed / "python"), "-c", "import ci_tools; print(ci_tools.__file__)"], adopter
    )
    assert where.stdout.startswith(str(installed.parent)), where.stdout
    cli = str(installed / "ci-tools")

    done = _run([cli, "generate", "--branch", "main", "--out", "out"], adopter)
    assert done.returncode == 0, done.stderr
    assert (adopter / "out" / "pytorch-python313-cpu-avx2.nix").is_file()
    done = _run([cli, "page", "--out", "site"], adopter)
    assert done.returncode == 0, done.stderr  # old: "templates/page/selector.js: not found"
    assert "<script>" in (adopter / "site" / "index.html").read_text(encoding="utf-8")
    done = _run([cli, "preflight", "--help"], adopter)
    assert done.returncode == 0 and "--inventory" in done.stdout
