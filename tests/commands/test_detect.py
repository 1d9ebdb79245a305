"""`ci-tools detect` as a user runs it: text (golden files), --json, overrides, exit codes."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_tools.catalog.model import Catalog
from tests.conftest import DATA, GOLDEN, REPO_ROOT

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


def flags_of_text(text: str) -> list[str]:
    """The first processor's flags, read here without hostinfo."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return value.split()
    return []


def flags_of(fixture: str) -> str:
    """The flags of a cpuinfo fixture as --cpu-flags takes them."""
    return ",".join(flags_of_text((DATA / f"cpuinfo-{fixture}.txt").read_text()))


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
    assert path.is_file(), f"{path} missing: run with UPDATE_GOLDEN=1 to create it"
    assert actual == path.read_text()


def fake_nvidia_smi(bin_dir: Path, output: str) -> Path:
    """An nvidia-smi that prints `output` and leaves a mark that it ran."""
    bin_dir.mkdir(exist_ok=True)
    mark = bin_dir / "ran"
    script = bin_dir / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ntouch '{mark}'\ncat <<'EOF'\n{output}EOF\n")
    script.chmod(0o755)
    return mark


def as_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_text_h100_on_sapphire_rapids(run_cli: CliRunner) -> None:
    result = run_cli(
        "detect", "--branch", "main", "--machine", "x86_64", "--gpu-cc", "9.0",
        "--cpu-flags", flags_of("sapphire-rapids"), "--org", "acme",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    check_golden("detect-h100-sapphire-rapids.txt", result.stdout)


def test_text_branch_without_the_gpu_points_to_the_nearest(run_cli: CliRunner) -> None:
    result = run_cli(
        "detect", "--branch", "cuda-13_0", "--machine", "x86_64", "--gpu-cc", "6.1",
        "--cpu-flags", flags_of("haswell"), "--org", "acme",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    check_golden("detect-sm61-cuda-13_0.txt", result.stdout)
    assert result.stderr == ""


def test_dgx_spark_on_main_gets_an_install_line(run_cli: CliRunner, tmp_path: Path) -> None:
    """What a DGX Spark's nvidia-smi and Grace CPU say, on main, which has no sm121."""
    fake_nvidia_smi(tmp_path, (DATA / "nvidia-smi-gb10.txt").read_text())
    result = run_cli(
        "detect", "--branch", "main", "--machine", "aarch64", "--cpu-flags", flags_of("grace"),
        extra_path=[tmp_path],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    check_golden("detect-dgx-spark-main.txt", result.stdout)
    assert "flox install barstoolbluz/pytorch-python313-cuda13_0-sm121-armv9" in result.stdout


def test_nothing_anywhere_exits_1(run_cli: CliRunner) -> None:
    result = run_cli(
        "detect", "--branch", "cuda-13_0", "--machine", "x86_64", "--gpu-cc", "11.0",
        "--cpu-flags", flags_of("zen4"),
    )  # fmt: skip
    assert result.returncode == 1
    assert "without the GPU: flox install barstoolbluz/pytorch-python313-cpu-avx512" in (
        result.stdout
    )
    assert "ci-tools: error: no pytorch variant on any branch fits this machine" in result.stderr


def test_json_shape(run_cli: CliRunner) -> None:
    result = run_cli(
        "detect", "--json", "--branch", "main", "--machine", "aarch64", "--gpu-cc", "9.0",
        "--cpu-flags", flags_of("grace"), "--org", "acme", "--driver", "580.65.06",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = as_json(result)
    variant = {
        "package": "pytorch-python313-cuda12_8-sm90-armv9",
        "branch": "main",
        "install": "flox install acme/pytorch-python313-cuda12_8-sm90-armv9",
        "installs": [
            "flox install acme/pytorch-python313-cuda12_8-sm90-armv9",
            "flox install acme/torchvision-python313-cuda12_8-sm90-armv9",
        ],
        "versions": {"pytorch": "2.8.0", "torchvision": "0.23.0"},
        "python": "3.13",
        "cuda": "12.8",
        "min_driver": 570,
        "verify": "flox activate -- python3 -c 'import torch; "
        "print(torch.__version__, torch.version.cuda, torch.cuda.get_arch_list())'",
        "expect": "2.8.0 12.8 ['sm_90']",
    }
    assert data == {
        "branch": "main",
        "package": "pytorch",
        "python": "3.13",
        "workload": "general",
        "machine": "aarch64",
        "platform": "aarch64-linux",
        "driver": "580.65.06",
        "recommendations": [
            {
                "gpu": {
                    "name": None,
                    "names": [],
                    "count": 1,
                    "capability": "9.0",
                    "sm": "sm90",
                    "family": "Hopper",
                },
                "package": "pytorch-python313-cuda12_8-sm90-armv9",
                "isa": "armv9",
                "reason": "compute capability 9.0 (sm90, Hopper); armv9: sve sve2 present",
                "install": "flox install acme/pytorch-python313-cuda12_8-sm90-armv9",
                "variant": variant,
                "alternatives": [],
                "fallback": None,
                "best": variant,
            }
        ],
        "warnings": [],
        "ok": True,
        "exit_code": 0,
    }


def test_json_failure_names_other_branches_nearest_first(run_cli: CliRunner) -> None:
    result = run_cli(
        "detect", "--json", "--branch", "cuda-13_0", "--gpu-cc", "6.1", "--machine", "x86_64",
        "--cpu-flags", flags_of("sapphire-rapids"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = as_json(result)
    assert (data["ok"], data["exit_code"]) == (True, 0)
    (rec,) = data["recommendations"]
    assert (rec["package"], rec["install"], rec["isa"], rec["variant"]) == (None, None, None, None)
    assert [(a["branch"], a["package"]) for a in rec["alternatives"]] == [
        ("cuda-12_9", "pytorch-python313-cuda12_9-sm61-avx2"),
        ("main", "pytorch-python313-cuda12_8-sm61-avx2"),
    ]
    assert rec["best"] == rec["alternatives"][0]


def test_the_org_comes_from_the_catalog(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("detect", "--json", "--machine", "arm64-darwin", "--branch", "main")
    assert result.returncode == 0, result.stderr
    (rec,) = as_json(result)["recommendations"]
    assert rec["install"] == "flox install barstoolbluz/pytorch-python313-darwin-mps"
    assert rec["gpu"] is None
    # A catalog without `org`: the placeholder, and a warning that says where to set it.
    text = (REPO_ROOT / "catalog.yaml").read_text().replace("\norg: barstoolbluz\n", "\n", 1)
    (tmp_path / "catalog.yaml").write_text(text)
    for name in ("nix",):
        shutil.copytree(REPO_ROOT / name, tmp_path / name)
    result = run_cli(
        "detect", "--catalog", str(tmp_path / "catalog.yaml"), "--machine", "arm64",
        "--branch", "main",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "flox install <org>/pytorch-python313-darwin-mps" in result.stdout
    assert "names no `org`" in result.stderr


def test_gpu_cc_repeated_and_comma_separated(run_cli: CliRunner) -> None:
    result = run_cli(
        "detect", "--json", "--branch", "main", "--machine", "x86_64", "--gpu-cc", "9.0,8.6",
        "--gpu-cc", "9.0", "--cpu-flags", flags_of("haswell"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = as_json(result)
    assert [r["package"] for r in data["recommendations"]] == [
        "pytorch-python313-cuda12_8-sm90-avx2",
        "pytorch-python313-cuda12_8-sm86-avx2",
    ]
    assert [r["gpu"]["count"] for r in data["recommendations"]] == [2, 1]
    assert len(data["warnings"]) == 1


def test_text_warnings_go_to_stderr(run_cli: CliRunner) -> None:
    result = run_cli(
        "detect", "--machine", "x86_64", "--gpu-cc", "9.0", "--gpu-cc", "8.6",
        "--cpu-flags", flags_of("zen4"), "--branch", "main",
    )  # fmt: skip
    assert result.returncode == 0
    assert "ci-tools: warning: GPUs of 2 compute capabilities" in result.stderr
    assert "warning" not in result.stdout


def test_nvidia_smi_h100_on_main(run_cli: CliRunner, tmp_path: Path) -> None:
    """What the GPU machine prints leads to the sm90 variant (cc 9.0)."""
    mark = fake_nvidia_smi(tmp_path, (DATA / "nvidia-smi-h100.txt").read_text())
    result = run_cli(
        "detect", "--json", "--branch", "main", "--machine", "x86_64",
        "--cpu-flags", flags_of("sapphire-rapids"), extra_path=[tmp_path],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (rec,) = as_json(result)["recommendations"]
    assert mark.exists()
    assert rec["package"] == "pytorch-python313-cuda12_8-sm90-avx512"
    assert rec["gpu"]["name"] == "NVIDIA H100 80GB HBM3"
    assert rec["reason"].startswith("NVIDIA H100 80GB HBM3 (sm90, Hopper); avx512:")


def test_gpu_override_does_not_ask_nvidia_smi(run_cli: CliRunner, tmp_path: Path) -> None:
    mark = fake_nvidia_smi(tmp_path, (DATA / "nvidia-smi-h100.txt").read_text())
    result = run_cli(
        "detect", "--json", "--branch", "main", "--machine", "x86_64", "--gpu-cc", "none",
        "--cpu-flags", "avx avx2 fma f16c", extra_path=[tmp_path],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not mark.exists()
    (rec,) = as_json(result)["recommendations"]
    assert rec["package"] == "pytorch-python313-cpu-avx2"
    assert rec["reason"].startswith("no NVIDIA GPU (as stated);")


def test_failing_nvidia_smi_means_no_gpu(run_cli: CliRunner, tmp_path: Path) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    script.chmod(0o755)
    result = run_cli(
        "detect", "--json", "--branch", "main", "--machine", "x86_64",
        "--cpu-flags", flags_of("haswell"), extra_path=[tmp_path],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = as_json(result)
    assert data["recommendations"][0]["package"] == "pytorch-python313-cpu-avx2"
    assert "nvidia-smi failed (exit 9: NVIDIA-SMI has failed)" in data["warnings"][0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--machine", "riscv64"), '--machine: unknown machine "riscv64"; use one of x86_64, aarch64, arm64-darwin, arm64'),
        (("--driver", "latest"), '--driver: "latest" is not an NVIDIA driver version'),
        (("--driver", "580.65.06.1"), '--driver: "580.65.06.1" is not an NVIDIA driver version'),
        (("--python", "3.9"), 'branch main builds no Python "3.9"'),
        (("--gpu-cc", "9"), '--gpu-cc: "9" is not a compute capability'),
        (("--gpu-cc", "none,9.0"), '--gpu-cc: "none" is not a compute capability'),
        (("--gpu-cc", "sm90"), '--gpu-cc: "sm90" is not a compute capability'),
        (("--cpu-flags", ""), "--cpu-flags: no flags given"),
        (("--cpu-flags", "AVX2"), '--cpu-flags: "AVX2" is not a cpuinfo flag'),
        (("--workload", "training"), 'unknown workload "training"; use one of general, bf16-training'),
        (("--package", "jax"), 'unknown package "jax"'),
        (("--branch", "cuda-11_8"), 'unknown branch "cuda-11_8"'),
        (("--machine", "arm64-darwin", "--gpu-cc", "9.0"), "--gpu-cc does not apply to an arm64-darwin"),
        (("--machine", "arm64", "--driver", "580"), "--driver does not apply to an arm64-darwin"),
    ],
)  # fmt: skip
def test_bad_arguments_exit_2(run_cli: CliRunner, args: tuple[str, ...], message: str) -> None:
    result = run_cli("detect", "--branch", "main", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_no_catalog_exit_2(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("detect", "--gpu-cc", "none", cwd=tmp_path)
    assert result.returncode == 2
    assert f"no catalog.yaml and no .flox/pkgs/ in {tmp_path}" in result.stderr
    assert "run it where they are, or pass --catalog PATH" in result.stderr


def _this_machine() -> str | None:
    system, machine = platform.system(), platform.machine()
    if system == "Linux" and machine in ("x86_64", "aarch64"):
        return machine
    return None


def test_this_machine(run_cli: CliRunner, catalog: Catalog) -> None:
    """Run on the real host: no overrides, so nvidia-smi, /proc/cpuinfo and uname are read."""
    machine = _this_machine()
    if machine is None:
        pytest.skip(f"reads /proc/cpuinfo: needs Linux x86_64/aarch64, not {platform.platform()}")
    if shutil.which("nvidia-smi") is not None:
        pytest.skip("this machine has nvidia-smi: the CPU-only case needs a machine without")
    result = run_cli("detect", "--json")
    data = as_json(result)
    assert data["machine"] == machine
    host_flags = set(flags_of_text(Path("/proc/cpuinfo").read_text()))
    (rec,) = data["recommendations"]
    assert rec["gpu"] is None
    assert rec["reason"].startswith("no NVIDIA GPU (nvidia-smi not found)")
    branch = catalog.branches[data["branch"]]
    built = {isa for isa, _ in branch.variants["pytorch"].cpu}
    fits = sorted(
        (isa for isa in catalog.isas.values()
         if isa.name in built and isa.workload is None
         and isa.platform.value == f"{machine}-linux" and set(isa.cpuinfo) <= host_flags),
        key=lambda isa: isa.level,
    )  # fmt: skip
    if not fits:
        assert result.returncode == 1
        assert rec["package"] is None
        return
    assert result.returncode == 0, result.stderr
    best = fits[-1]
    assert rec["isa"] == best.name
    assert rec["package"] == f"pytorch-python{data['python'].replace('.', '')}-cpu-{best.name}"


def test_scripts_state_facts_in_the_environment(run_cli: CliRunner, tmp_path: Path) -> None:
    mark = fake_nvidia_smi(tmp_path, (DATA / "nvidia-smi-h100.txt").read_text())
    env = {
        "CI_TOOLS_MACHINE": "x86_64",
        "CI_TOOLS_GPU_CC": "9.0",
        "CI_TOOLS_CPU_FLAGS": flags_of("haswell"),
        "CI_TOOLS_DRIVER": "575.57.08",
    }
    result = run_cli("detect", "--json", "--branch", "cuda-13_0", env=env, extra_path=[tmp_path])
    assert result.returncode == 0, result.stderr
    assert not mark.exists()
    data = as_json(result)
    assert (data["machine"], data["driver"]) == ("x86_64", "575.57.08")
    (rec,) = data["recommendations"]
    assert rec["best"]["package"] == "pytorch-python313-cuda12_9-sm90-avx2"
    # An option beats its variable.
    result = run_cli("detect", "--json", "--branch", "main", "--gpu-cc", "none", env=env)
    (rec,) = as_json(result)["recommendations"]
    assert rec["package"] == "pytorch-python313-cpu-avx2"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CI_TOOLS_GPU_CC", "nine", 'CI_TOOLS_GPU_CC: "nine" is not a compute capability'),
        ("CI_TOOLS_CPU_FLAGS", "AVX", 'CI_TOOLS_CPU_FLAGS: "AVX" is not a cpuinfo flag'),
        ("CI_TOOLS_DRIVER", "x", 'CI_TOOLS_DRIVER: "x" is not an NVIDIA driver version'),
        ("CI_TOOLS_MACHINE", "sparc", 'CI_TOOLS_MACHINE: unknown machine "sparc"'),
    ],
)
def test_a_bad_variable_is_named(
    run_cli: CliRunner, variable: str, value: str, message: str
) -> None:
    result = run_cli("detect", "--branch", "main", env={variable: value})
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("machine", ["arm64", "aarch64-darwin"])
def test_a_mac_s_uname_is_taken(run_cli: CliRunner, machine: str) -> None:
    result = run_cli("detect", "--json", "--branch", "main", "--machine", machine)
    assert result.returncode == 0, result.stderr
    data = as_json(result)
    assert (data["machine"], data["platform"]) == ("arm64-darwin", "aarch64-darwin")


def test_the_driver_comes_from_nvidia_smi(run_cli: CliRunner, tmp_path: Path) -> None:
    smi = "NVIDIA H100 80GB HBM3, 9.0, 570.124.06\n"
    fake_nvidia_smi(tmp_path, smi)
    result = run_cli(
        "detect", "--json", "--branch", "cuda-13_0", "--machine", "x86_64",
        "--cpu-flags", flags_of("zen4"), extra_path=[tmp_path],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = as_json(result)
    assert data["driver"] == "570.124.06"
    (rec,) = data["recommendations"]
    assert rec["package"] is None
    assert "needs NVIDIA driver >= 580 (this machine has 570.124.06)" in rec["reason"]
    assert rec["best"]["package"] == "pytorch-python313-cuda12_8-sm90-avx512"
    # --driver overrides what nvidia-smi says.
    result = run_cli(
        "detect", "--json", "--branch", "cuda-13_0", "--machine", "x86_64", "--driver", "580",
        "--cpu-flags", flags_of("zen4"), extra_path=[tmp_path],
    )  # fmt: skip
    (rec,) = as_json(result)["recommendations"]
    assert rec["package"] == "pytorch-python313-cuda13_0-sm90-avx512"
