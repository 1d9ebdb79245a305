"""A repository without a catalog (upstream's main branch, tests/data/upstream/main.names):
what ci-tools.yaml does not state is said to be unknown, in words, in every output of
`detect` and the page; what it states (`org`, versions, least drivers) is used (issue 30
item 3). The old output: `pytorch None`, `expect: ? None []`, `needs NVIDIA driver >= 0`, and
advice to "set `org:` there", which ci-tools.yaml refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA, CliRunner
from tests.doubles.flox.test_flox_double import make_repo, recipe

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GPU_HOST = ("--gpu-cc", "9.0", "--driver", "560.35.03", "--machine", "x86_64")
CPU_HOST = ("--gpu-cc", "none", "--machine", "x86_64")
FLAGS = ("--cpu-flags", "avx avx2 fma f16c")


def _upstream(tmp_path: Path, settings: str | None) -> Path:
    listed = (DATA / "upstream" / "main.names").read_text(encoding="utf-8").split()
    files = {f".flox/pkgs/{f}": recipe(f.removesuffix(".nix")) for f in listed}
    files["ci-tools.yaml"] = 'ignore: ["*-wrapper.nix"]\n' + (settings or "")
    return make_repo(tmp_path, files)


def test_unknown_facts_are_said_in_words(tmp_path: Path, run_cli: CliRunner) -> None:
    repo = _upstream(tmp_path, None)
    gpu = run_cli("detect", *GPU_HOST, *FLAGS, cwd=repo)
    assert gpu.returncode == 0, gpu.stderr
    assert "pytorch version unknown, CUDA 12.8" in gpu.stdout
    assert "needs an NVIDIA driver for CUDA 12.8: its least version unknown" in gpu.stdout
    assert "(the pytorch version, unknown to ci-tools) 12.8 ['sm_90']" in gpu.stdout
    assert "None" not in gpu.stdout and ">= 0" not in gpu.stdout and "?" not in gpu.stdout
    assert "set `org:` in ci-tools.yaml or pass --org" in gpu.stderr
    cpu = run_cli("detect", *CPU_HOST, *FLAGS, cwd=repo)
    assert "pytorch version unknown, Python 3.13" in cpu.stdout
    answer = json.loads(run_cli("detect", *GPU_HOST, *FLAGS, "--json", cwd=repo).stdout)
    assert answer["recommendations"][0]["best"]["min_driver"] is None  # not 0


def test_stated_facts_are_used(tmp_path: Path, run_cli: CliRunner) -> None:
    settings = (
        "org: acme\nmin_driver: {cuda12_8: 570}\n"
        'branches:\n  main:\n    versions: {pytorch: "2.10.0"}\n'
    )
    repo = _upstream(tmp_path, settings)
    done = run_cli("detect", *GPU_HOST, *FLAGS, cwd=repo)
    # The stated least driver (570) rules out this machine's 560.
    assert done.returncode == 1
    assert "needs NVIDIA driver >= 570 (this machine has 560.35.03)" in done.stdout
    done = run_cli("detect", *GPU_HOST[:2], "--driver", "575.1", *GPU_HOST[4:], *FLAGS, cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pytorch 2.10.0, CUDA 12.8" in done.stdout
    assert "needs NVIDIA driver >= 570 (this machine: 575.1)" in done.stdout
    assert "flox install acme/pytorch-python313-cuda12_8-sm90-avx2" in done.stdout
    assert "warning" not in done.stderr


def test_the_page_of_a_catalog_less_repository(tmp_path: Path, run_cli: CliRunner) -> None:
    repo = _upstream(tmp_path, "org: acme\n")
    done = run_cli("page", "--out", str(tmp_path / "site"), cwd=repo)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "acme/pytorch-python313-cuda12_8-sm90-avx2" in page
    assert "<td>12.8</td><td>unknown</td>" in page and "<td>12.8</td><td>0</td>" not in page
