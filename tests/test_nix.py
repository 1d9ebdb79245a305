"""The rendered recipes under Nix itself: every file parses, and evaluating them against a mock
nixpkgs (tests/nix/mock-nixpkgs.nix) yields the attributes the catalog asks for.

Runs `nix-instantiate` (Debian's nix-bin); skips with the reason where it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ci_tools import render
from ci_tools.catalog import parse_catalog_text
from ci_tools.model import Catalog

MOCK = Path(__file__).parent / "nix" / "mock-nixpkgs.nix"

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None,
    reason="nix-instantiate not found: install Debian's nix-bin to run the Nix tests",
)


@pytest.fixture(scope="module")
def nix_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """nix-instantiate with its state in a temporary directory: works unprivileged and offline."""
    state = tmp_path_factory.mktemp("nix-state")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(state),
        "NIX_STATE_DIR": str(state / "state"),
        "NIX_LOG_DIR": str(state / "log"),
        "NIX_CONF_DIR": str(state / "conf"),
        "NIX_REMOTE": "",
        "XDG_CACHE_HOME": str(state / "cache"),
    }


@pytest.fixture(scope="module")
def rendered(
    catalog: Catalog, repo_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Every branch rendered into a directory of its own: branch -> directory."""
    env = render.environment(repo_root / "templates")
    out = {}
    for branch in catalog.branches:
        directory = tmp_path_factory.mktemp(branch)
        for file in render.render_branch(catalog, branch, env):
            (directory / file.path).parent.mkdir(parents=True, exist_ok=True)
            (directory / file.path).write_text(file.text, encoding="utf-8")
        out[branch] = directory
    return out


def _nix(args: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("nix-instantiate") or "nix-instantiate", "--readonly-mode", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _eval(expression: str, env: Mapping[str, str]) -> Any:
    result = _nix(["--eval", "--strict", "--json", "-E", expression], env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _all_nix_files(directory: Path) -> Iterator[Path]:
    return iter(sorted(directory.rglob("*.nix")))


def test_every_rendered_file_of_every_branch_parses(
    rendered: dict[str, Path], nix_env: dict[str, str]
) -> None:
    files = [str(p) for directory in rendered.values() for p in _all_nix_files(directory)]
    assert len(files) == (89 + 5) + (115 + 5) + (64 + 5)
    result = _nix(["--parse", *files], nix_env)
    assert result.returncode == 0, result.stderr


def test_the_committed_recipes_parse(repo_root: Path, nix_env: dict[str, str]) -> None:
    files = [str(p) for p in _all_nix_files(repo_root / ".flox" / "pkgs")]
    assert files
    result = _nix(["--parse", *files], nix_env)
    assert result.returncode == 0, result.stderr


def test_the_parse_check_fails_on_broken_nix(tmp_path: Path, nix_env: dict[str, str]) -> None:
    broken = tmp_path / "broken.nix"
    broken.write_text("{ pinnedPkgs ? null }: {\n", encoding="utf-8")
    result = _nix(["--parse", str(broken)], nix_env)
    assert result.returncode != 0
    assert "broken.nix" in result.stderr


def test_every_recipe_evaluates_with_its_file_name_as_pname(
    rendered: dict[str, Path], nix_env: dict[str, str]
) -> None:
    """One evaluation per branch over all its recipes: pname, and the defaulted argument."""
    for branch, directory in rendered.items():
        data = _eval(
            f"""
            let
              mock = import {MOCK} {{ }};
              dir = {directory};
              names = builtins.filter (n: builtins.match ".*\\\\.nix" n != null)
                (builtins.attrNames (builtins.readDir dir));
              one = n: let f = import (dir + "/${{n}}"); in {{
                name = n;
                pname = (f {{ pinnedPkgs = mock; }}).pname;
                args = builtins.functionArgs f;
              }};
            in map one names
            """,
            nix_env,
        )
        assert len(data) == {"main": 89, "cuda-12_9": 115, "cuda-13_0": 64}[branch]
        for entry in data:
            assert entry["pname"] + ".nix" == entry["name"]
            # The pin's only way in: one argument, named so flox cannot fill it, with a default.
            assert entry["args"] == {"pinnedPkgs": True}


_SUMMARY = """
  summary = r: {
    pname = r.pname;
    gpuTargets = r.overrideArgs.gpuTargets or null;
    cudaSupport = r.overrideArgs.cudaSupport or null;
    preConfigure = r.preConfigure;
    platforms = r.meta.platforms;
    description = r.meta.description;
    gpuArch = r.passthru.gpuArch;
    blasProvider = r.passthru.blasProvider;
    cpuISA = r.passthru.cpuISA;
    requiredSystemFeatures = r.requiredSystemFeatures or [ ];
    disallowedReferences = map toString (r.disallowedReferences or [ ]);
    postFixup = r.postFixup or "";
    buildInputs = map toString r.buildInputs;
    torch = if r.overrideArgs ? torch then summary r.overrideArgs.torch else null;
  };
"""

# (branch, variant) for each kind of recipe.
KINDS = {
    "gpu-x86": ("main", "pytorch-python313-cuda12_8-sm90-avx512"),
    "gpu-arm": ("cuda-13_0", "pytorch-python313-cuda13_0-sm121-armv9"),
    "sm61-avx": ("main", "pytorch-python313-cuda12_8-sm61-avx"),
    "cpu": ("main", "pytorch-python313-cpu-avx2"),
    "cpu-avx": ("cuda-12_9", "pytorch-python313-cpu-avx"),
    "darwin": ("main", "pytorch-python313-darwin-mps"),
    "torchvision": ("main", "torchvision-python313-cuda12_8-sm90-avx512"),
    "torchvision-arm": ("cuda-13_0", "torchvision-python313-cuda13_0-sm110-armv8_2"),
    "torchvision-sibling": ("main", "pytorch-python313-cuda12_8-sm90-avx512"),
}


@pytest.fixture(scope="module")
def evaluated(rendered: dict[str, Path], nix_env: dict[str, str]) -> dict[str, Any]:
    """Each kind's recipe evaluated against the mock, in one nix-instantiate call."""
    cases = "\n".join(
        f'    "{kind}" = summary (import {rendered[branch]}/{name}.nix {{ pinnedPkgs = mock; }});'
        for kind, (branch, name) in KINDS.items()
    )
    data: dict[str, Any] = _eval(
        f"let\n  mock = import {MOCK} {{ }};\n{_SUMMARY}in {{\n{cases}\n}}", nix_env
    )
    return data


def _exports(pre_configure: str) -> dict[str, str]:
    out = {}
    for line in pre_configure.splitlines():
        if line.startswith("export ") and "=" in line:
            key, _, value = line.removeprefix("export ").partition("=")
            out[key] = value.strip('"')
    return out


def test_gpu_x86(evaluated: dict[str, Any]) -> None:
    r = evaluated["gpu-x86"]
    assert r["pname"] == "pytorch-python313-cuda12_8-sm90-avx512"
    assert r["cudaSupport"] is True
    assert r["gpuTargets"] == ["9.0"]
    exports = _exports(r["preConfigure"])
    flags = "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma"
    assert exports["CXXFLAGS"] == f"$CXXFLAGS {flags}"
    assert exports["CFLAGS"] == f"$CFLAGS {flags}"
    assert "USE_CUDNN" not in exports
    assert "USE_FBGEMM" not in exports
    assert r["platforms"] == ["x86_64-linux"]
    assert (r["gpuArch"], r["blasProvider"], r["cpuISA"]) == ("sm90", "cublas", "avx512")
    assert r["requiredSystemFeatures"] == ["big-parallel"]
    assert "Hopper" in r["description"]


def test_gpu_closure_excludes_the_build_toolchain(evaluated: dict[str, Any]) -> None:
    r = evaluated["gpu-x86"]
    # Mock store paths are /nix/store/<hash>-<name>.
    toolchain = {ref.split("-", 1)[1] for ref in r["disallowedReferences"]}
    assert toolchain == {"gcc-wrapper", "gcc", "binutils-wrapper", "binutils"}
    for ref in r["disallowedReferences"]:
        assert f"-t {ref}" in r["postFixup"]


def test_gpu_arm_uses_the_decimal_capability(evaluated: dict[str, Any]) -> None:
    r = evaluated["gpu-arm"]
    assert r["pname"] == "pytorch-python313-cuda13_0-sm121-armv9"
    assert r["gpuTargets"] == ["12.1"]
    assert _exports(r["preConfigure"])["CXXFLAGS"] == "$CXXFLAGS -march=armv9-a+sve+sve2"
    assert r["platforms"] == ["aarch64-linux"]


def test_sm61_avx_turns_off_cudnn_and_what_avx_cannot_carry(evaluated: dict[str, Any]) -> None:
    r = evaluated["sm61-avx"]
    assert r["gpuTargets"] == ["6.1"]
    exports = _exports(r["preConfigure"])
    assert exports["CXXFLAGS"] == "$CXXFLAGS -mavx"
    for feature in ("CUDNN", "FBGEMM", "MKLDNN", "NNPACK"):
        assert exports[f"USE_{feature}"] == "0"
    assert r["platforms"] == ["x86_64-linux"]


def test_cpu(evaluated: dict[str, Any]) -> None:
    r = evaluated["cpu"]
    assert r["pname"] == "pytorch-python313-cpu-avx2"
    assert r["cudaSupport"] is False
    assert r["gpuTargets"] is None
    exports = _exports(r["preConfigure"])
    assert exports["CXXFLAGS"] == "$CXXFLAGS -mavx2 -mfma -mf16c"
    assert exports["USE_CUDA"] == "0"
    assert exports["USE_CUDNN"] == "0"
    assert exports["BLAS"] == "OpenBLAS"
    assert exports["USE_MKLDNN"] == "1"
    assert any(ref.endswith("-openblas") for ref in r["buildInputs"])
    assert r["platforms"] == ["x86_64-linux"]
    assert (r["gpuArch"], r["blasProvider"], r["cpuISA"]) == (None, "openblas", "avx2")


def test_cpu_avx_turns_mkldnn_off(evaluated: dict[str, Any]) -> None:
    exports = _exports(evaluated["cpu-avx"]["preConfigure"])
    # The last export wins in the shell: MKLDNN must end up off.
    lines = [
        line for line in evaluated["cpu-avx"]["preConfigure"].splitlines() if "USE_MKLDNN" in line
    ]
    assert lines == ["export USE_MKLDNN=0"]
    assert exports["USE_FBGEMM"] == "0"


def test_darwin(evaluated: dict[str, Any]) -> None:
    r = evaluated["darwin"]
    assert r["pname"] == "pytorch-python313-darwin-mps"
    assert r["gpuTargets"] is None
    assert r["cudaSupport"] is None  # nixpkgs' darwin torch as it is
    assert "CXXFLAGS" not in _exports(r["preConfigure"])
    assert r["platforms"] == ["aarch64-darwin"]
    assert r["gpuArch"] == "mps"


def test_torchvision_builds_against_the_sibling_recipe(evaluated: dict[str, Any]) -> None:
    r = evaluated["torchvision"]
    assert r["pname"] == "torchvision-python313-cuda12_8-sm90-avx512"
    # torch is the sibling recipe's derivation itself, not a second torch declared here.
    assert r["torch"] == evaluated["torchvision-sibling"]
    assert r["torch"]["pname"] == "pytorch-python313-cuda12_8-sm90-avx512"
    assert r["torch"]["gpuTargets"] == ["9.0"]
    flags = "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma"
    assert _exports(r["preConfigure"])["CXXFLAGS"] == f"$CXXFLAGS {flags}"
    assert r["platforms"] == ["x86_64-linux"]
    assert (r["gpuArch"], r["cpuISA"]) == ("sm90", "avx512")


def test_torchvision_arm(evaluated: dict[str, Any]) -> None:
    r = evaluated["torchvision-arm"]
    assert r["torch"]["pname"] == "pytorch-python313-cuda13_0-sm110-armv8_2"
    assert r["torch"]["gpuTargets"] == ["11.0"]
    assert r["platforms"] == ["aarch64-linux"]


def test_nixpkgs_pin(rendered: dict[str, Path], nix_env: dict[str, str], catalog: Catalog) -> None:
    """lib/nixpkgs.nix with fetchTarball and import replaced: the pin, config and overlay."""
    for branch_name, directory in rendered.items():
        branch = catalog.branches[branch_name]
        data = _eval(
            f"""
            let
              fake = {{
                builtins = builtins // {{ fetchTarball = args: args; }};
                import = source: args: {{ inherit source args; }};
              }};
              r = scopedImport fake {directory}/lib/nixpkgs.nix
                {{ cudaSupport = true; cudaCapabilities = [ "9.0" ]; }};
              cpu = scopedImport fake {directory}/lib/nixpkgs.nix {{ }};
              final = {{ {branch.cuda_packages} = "the branch's CUDA"; }};
            in {{
              url = r.source.url;
              config = r.args.config;
              cpuConfig = cpu.args.config;
              cuda = ((builtins.head r.args.overlays) final {{ }}).cudaPackages;
              overlays = builtins.length r.args.overlays;
            }}
            """,
            nix_env,
        )
        assert data["url"].endswith(f"/{branch.nixpkgs_rev}.tar.gz")
        assert data["config"] == {
            "allowUnfree": True,
            "cudaSupport": True,
            "cudaCapabilities": ["9.0"],
        }
        assert data["cpuConfig"] == {"allowUnfree": True, "cudaSupport": False}
        assert data["cuda"] == "the branch's CUDA"
        assert data["overlays"] == 1 + len(branch.overlays)


def _catalog_with(repo_root: Path, old: str, new: str) -> Catalog:
    """The shipped catalog with its first `old` replaced by `new`."""
    text = (repo_root / "catalog.yaml").read_text(encoding="utf-8")
    assert old in text
    return parse_catalog_text(text.replace(old, new, 1), "catalog.yaml")


def test_nixpkgs_pin_with_hash_and_overlays(
    tmp_path: Path, repo_root: Path, nix_env: dict[str, str]
) -> None:
    """A branch with nixpkgs.sha256 and an extra overlay: both reach the pinned nixpkgs."""
    catalog = _catalog_with(
        repo_root,
        "    nixpkgs: {rev: fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3}\n",
        "    nixpkgs: {rev: fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3, sha256: "
        '"0000000000000000000000000000000000000000000000000000"}\n'
        '    overlays: ["final: prev: { marker = prev.marker + 1; }"]\n',
    )
    env = render.environment(repo_root / "templates")
    for file in render.render_branch(catalog, "main", env):
        (tmp_path / file.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file.path).write_text(file.text, encoding="utf-8")
    data = _eval(
        f"""
        let
          fake = {{
            builtins = builtins // {{ fetchTarball = args: args; }};
            import = source: args: {{ inherit source args; }};
          }};
          r = scopedImport fake {tmp_path}/lib/nixpkgs.nix {{ }};
          extra = builtins.elemAt r.args.overlays 1;
        in {{ sha256 = r.source.sha256; marker = (extra {{ }} {{ marker = 41; }}).marker; }}
        """,
        nix_env,
    )
    assert data == {"sha256": "0" * 52, "marker": 42}
