"""README's "Adopting ci-tools in an existing build repository", on a hand-written repository.

The repository has no catalog and publishes upstream's own spellings (barstoolbluz/build-pytorch:
`…-armv8.2`, `…-nightly`, `…-magma`, `…-mps`), a helper recipe and a backup file. With a
small `ci-tools.yaml` every command but `generate` works on it, and no name changes: the
matrix, detect, build (the flox double, real Nix), test (this machine's CPU torch), report,
publish and sync-workflows.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from ci_tools.build import results
from ci_tools.build.results import Status
from tests.conftest import REPO_ROOT, CliRunner
from tests.doubles.flox.test_flox_double import double_environment, make_repo, recipe
from tests.doubles.github.server import GitHubDouble
from tests.gitutil import commit_all

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None or shutil.which("git") is None,
    reason="needs nix-bin and git",
)

# The CPU stack of this interpreter's Python: `test --python sys.executable` below must name
# a variant of that Python (another is refused, exit 2).
PY = f"python{sys.version_info.major}{sys.version_info.minor}"
CPU = f"pytorch-{PY}-cpu-avx2"
ARM = "pytorch-python313-cpu-armv8.2"
GPU_ARM = "pytorch-python313-cuda12_8-sm90-armv8.2"
GPU = "pytorch-python313-cuda12_8-sm90-avx512"
NIGHTLY = "pytorch-python313-cuda12_8-sm121-armv9-nightly"
MAGMA = "pytorch-python313-cuda13_0-sm120-avx512-magma"
MPS = "pytorch-python313-mps"
VARIANTS = (CPU, ARM, GPU_ARM, GPU, NIGHTLY, MAGMA, MPS)
VISION = (f"torchvision-{PY}-cpu-avx2", "torchvision-python313-cuda12_8-sm90-avx512")
NOT_RECIPES = (
    "pytorch-python313-cuda13_0-sm121-armv9-nightly-wrapper.nix",  # a helper upstream had
    f"{CPU}.nix.backup",
)
SETTINGS = """\
# What this repository tells ci-tools beyond its recipes' names.
ignore: ["*.nix.backup", "*-wrapper.nix"]
branches:
  main:
    versions: {pytorch: "2.13.0"}
"""


@pytest.fixture
def adopted(tmp_path: Path) -> Path:
    files = {f".flox/pkgs/{name}.nix": recipe(name) for name in VARIANTS}
    files |= {f".flox/pkgs/{name}.nix": recipe(name) for name in VISION}
    files |= {f".flox/pkgs/{name}": "# not a recipe\n" for name in NOT_RECIPES}
    files["ci-tools.yaml"] = SETTINGS
    files[".gitignore"] = "/results/\nresult-*\n"
    for workflow in ("ci.yml", "release.yml"):
        path = f".github/workflows/{workflow}"
        files[path] = (REPO_ROOT / path).read_text(encoding="utf-8")
    return make_repo(tmp_path, files)


def test_matrix_keeps_every_published_name(adopted: Path, run_cli: CliRunner) -> None:
    done = run_cli("matrix", cwd=adopted)
    assert done.returncode == 0, done.stderr
    entries = {e["name"]: e for e in json.loads(done.stdout)["include"]}
    built = sorted(p for e in entries.values() for p in e["packages"])
    assert built == sorted((*VARIANTS, *VISION))  # the helper and the backup are not built
    assert entries[f"py{PY.removeprefix('python')}-cpu-avx2"]["packages"] == [CPU, VISION[0]]
    assert entries["py313-cpu-armv8_2"]["packages"] == [ARM]
    assert entries["py313-cpu-armv8_2"]["platform"] == "aarch64-linux"
    assert entries["py313-sm121-armv9-nightly"]["packages"] == [NIGHTLY]
    assert entries["py313-sm120-avx512-magma"]["packages"] == [MAGMA]
    assert entries["py313-darwin-mps"]["platform"] == "aarch64-darwin"
    # Without the settings file the helper and the backup are refused, each named.
    (adopted / "ci-tools.yaml").unlink()
    done = run_cli("matrix", cwd=adopted)
    assert done.returncode == 2
    for name in NOT_RECIPES:
        assert f".flox/pkgs/{name}" in done.stderr


def test_detect_recommends_the_published_name(adopted: Path, run_cli: CliRunner) -> None:
    grace_h100 = ("--machine", "aarch64", "--gpu-cc", "9.0", "--cpu-flags", "fphp,asimdhp,asimddp")
    done = run_cli("detect", *grace_h100, "--org", "acme", cwd=adopted)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == GPU_ARM
    assert f"flox install acme/{GPU_ARM}" in done.stdout
    mac = run_cli("detect", "--machine", "arm64-darwin", "--json", cwd=adopted)
    assert mac.returncode == 0, mac.stderr
    assert MPS in mac.stdout


def test_build_test_report_publish(adopted: Path, run_cli: CliRunner, tmp_path: Path) -> None:
    env = double_environment(tmp_path)
    done = run_cli("build", CPU, VISION[0], GPU_ARM, cwd=adopted, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in (CPU, VISION[0], GPU_ARM):
        record = results.load(results.result_path(adopted / "results", name))
        assert record.build is not None and record.build.status is Status.PASSED
        assert (record.variant, record.branch) == (name, "main")
    assert results.load(results.result_path(adopted / "results", GPU_ARM)).platform == (
        "aarch64-linux"
    )

    # This machine's CPU torch stands for the build: the settings' version is checked.
    done = run_cli("test", CPU, "--python", sys.executable, "--import-runs", "0", cwd=adopted)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed   torch-version        torch.__version__ is 2.13.0" in done.stdout
    record = results.load(results.result_path(adopted / "results", CPU))
    assert record.test is not None and record.test.status is Status.PASSED

    done = run_cli("report", "results", cwd=adopted)
    assert done.returncode == 0, done.stderr
    assert CPU in done.stdout and GPU_ARM in done.stdout

    done = run_cli("publish", CPU, "--org", "acme", "--dry-run", cwd=adopted, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"flox publish -o acme {CPU}" in done.stdout
    refused = run_cli("publish", GPU_ARM, "--org", "acme", "--dry-run", cwd=adopted, env=env)
    assert refused.returncode == 1  # built, never tested

    # The release, against the GitHub double: ci-tools' own notes template, published names.
    with GitHubDouble() as github:
        gh = {"GITHUB_TOKEN": "ghs_adoption0123456789", "GITHUB_REPOSITORY": "acme/torch-builds"}
        gh["GITHUB_API_URL"] = github.url
        args = ("release", "--branch", "main", "--results", "results", "--dry-run")
        done = run_cli(*args, cwd=adopted, env=gh)
    # The notes are written; nothing was published, so there is no release (issue 19).
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no release: nothing would be published" in done.stderr
    assert "## PyTorch 2.13.0 · CUDA 12.8 (main @ " in done.stdout
    assert f"| `{CPU}` | x86_64-linux | proven, not published |" in done.stdout
    assert f"| `{GPU_ARM}` | aarch64-linux | not tested |" in done.stdout


def test_sync_workflows_takes_the_settings_branches(adopted: Path, run_cli: CliRunner) -> None:
    assert run_cli("sync-workflows", "--check", cwd=adopted).returncode == 1
    done = run_cli("sync-workflows", cwd=adopted)
    assert done.returncode == 0, done.stderr
    assert run_cli("sync-workflows", "--check", cwd=adopted).returncode == 0
    commit_all(adopted, "workflows")
    # Without branches in the settings there is no list to keep.
    (adopted / "ci-tools.yaml").write_text('ignore: ["*.nix.backup", "*-wrapper.nix"]\n')
    done = run_cli("sync-workflows", cwd=adopted)
    assert done.returncode == 2
    assert "`branches:` in ci-tools.yaml" in done.stderr


def test_generate_says_it_needs_a_catalog(adopted: Path, run_cli: CliRunner) -> None:
    done = run_cli("generate", cwd=adopted)
    assert done.returncode == 2
    assert "`generate` renders recipes from catalog.yaml" in done.stderr
