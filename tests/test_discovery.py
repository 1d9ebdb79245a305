"""Variants from recipe file names, for build repositories without a catalog."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tools.discovery import DEFAULT_CPUINFO, discover, from_file_names
from ci_tools.model import Catalog, Kind, Platform
from tests.conftest import CliRunner

RECIPES = (
    "pytorch-python313-cuda12_9-sm90-avx512.nix",
    "torchvision-python313-cuda12_9-sm90-avx512.nix",
    "torchaudio-python313-cuda12_9-sm90-avx512.nix",
    "pytorch-python313-cuda12_9-sm121-armv9.nix",
    "pytorch-python312-cpu-avx2.nix",
    "torchvision-python312-cpu-avx512bf16.nix",  # no pytorch recipe of that name
    "pytorch-python313-darwin-mps.nix",
    "pytorch-python313-cpu-avx10.nix",  # an ISA the default table does not know
)


def test_names_become_targets_with_platform_and_base() -> None:
    found = from_file_names([*RECIPES, "default.nix", "pytorch-2.9.nix"])
    assert found.ignored == ("default.nix", "pytorch-2.9.nix")
    by_name = {t.name: t for t in found.targets}
    assert set(by_name) == {r.removesuffix(".nix") for r in RECIPES}

    vision = by_name["torchvision-python313-cuda12_9-sm90-avx512"]
    assert vision.base == "pytorch-python313-cuda12_9-sm90-avx512"
    assert by_name["torchaudio-python313-cuda12_9-sm90-avx512"].base == vision.base
    assert by_name["torchvision-python312-cpu-avx512bf16"].base is None
    assert by_name["pytorch-python313-cuda12_9-sm90-avx512"].base is None

    arm = by_name["pytorch-python313-cuda12_9-sm121-armv9"]
    assert (arm.platform, arm.kind, arm.sm, arm.cpuinfo) == (
        Platform.AARCH64_LINUX,
        Kind.GPU,
        "sm121",
        ("sve", "sve2"),
    )
    mac = by_name["pytorch-python313-darwin-mps"]
    assert (mac.platform, mac.kind, mac.cpuinfo) == (Platform.AARCH64_DARWIN, Kind.DARWIN, None)
    assert by_name["pytorch-python312-cpu-avx2"].python == "3.12"
    unknown = by_name["pytorch-python313-cpu-avx10"]
    assert (unknown.platform, unknown.cpuinfo) == (Platform.X86_64_LINUX, None)


def test_discover_reads_only_the_top_level_recipes(tmp_path: Path) -> None:
    pkgs = tmp_path / "pkgs"
    (pkgs / "lib").mkdir(parents=True)
    (pkgs / "lib" / "torch-cuda.nix").write_text("{}")
    (pkgs / "pytorch-python313-cpu-avx2.nix").write_text("{}")
    (pkgs / "README.md").write_text("")
    found = discover(pkgs)
    assert [t.name for t in found.targets] == ["pytorch-python313-cpu-avx2"]
    assert found.ignored == ()


def test_default_isa_table_matches_the_shipped_catalog(catalog: Catalog) -> None:
    assert dict(DEFAULT_CPUINFO) == {name: isa.cpuinfo for name, isa in catalog.isas.items()}


def _checkout(tmp_path: Path, files: tuple[str, ...]) -> Path:
    pkgs = tmp_path / ".flox" / "pkgs"
    (pkgs / "lib").mkdir(parents=True)
    (pkgs / "lib" / "nixpkgs.nix").write_text("{}\n")
    for name in files:
        (pkgs / name).write_text("{}\n")
    return tmp_path


def test_matrix_in_a_checkout_without_catalog(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _checkout(tmp_path, (*RECIPES, "notes.nix"))
    result = run_cli("matrix", "--group", "none", "--branch", "cuda-12_9", cwd=root)
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["include"]
    assert sorted(p for e in entries for p in e["packages"]) == sorted(
        r.removesuffix(".nix") for r in RECIPES
    )
    assert {e["branch"] for e in entries} == {"cuda-12_9"}
    assert "notes.nix" in result.stderr and "ignored 1" in result.stderr

    stacks = json.loads(run_cli("matrix", "--branch", "x", cwd=root).stdout)["include"]
    by_name = {e["name"]: e for e in stacks}
    assert by_name["py313-sm90-avx512"]["packages"] == [
        "pytorch-python313-cuda12_9-sm90-avx512",
        "torchaudio-python313-cuda12_9-sm90-avx512",
        "torchvision-python313-cuda12_9-sm90-avx512",
    ]
    assert by_name["py313-cpu-avx10"]["test"] == "none"
    assert "not in the ISA table" in by_name["py313-cpu-avx10"]["test_reason"]
    assert by_name["py313-darwin-mps"]["runs_on"] == ["self-hosted", "macOS", "ARM64"]
    assert by_name["py313-sm121-armv9"]["platform"] == "aarch64-linux"


def test_branch_defaults_to_the_git_branch(tmp_path: Path, run_cli: CliRunner) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    root = _checkout(tmp_path, ("pytorch-python313-cpu-avx2.nix",))
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    for argv in (
        ["init", "-q", "-b", "cuda-13_0"],
        ["add", "."],
        [*ident, "commit", "-q", "-m", "recipes"],
    ):
        subprocess.run([git, *argv], cwd=root, check=True, capture_output=True)
    result = run_cli("matrix", cwd=root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["include"][0]["branch"] == "cuda-13_0"


def test_no_catalog_and_no_recipes_is_bad_input(tmp_path: Path, run_cli: CliRunner) -> None:
    result = run_cli("matrix", cwd=tmp_path)
    assert result.returncode == 2
    assert "no catalog.yaml and no .flox/pkgs/" in result.stderr
    assert "Traceback" not in result.stderr
