"""answer: a Detection as text and as the JSON `detect --json` prints, built here from
Detection records directly (the command's golden files cover the whole command)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from ci_tools.catalog.model import Catalog, Platform
from ci_tools.host import answer
from ci_tools.host.detect import Alternative, Detection, GpuGroup, Recommendation, detect
from ci_tools.host.facts import Host

H100S = GpuGroup(names=("NVIDIA H100 PCIe",), count=2, capability="9.0", sm="sm90", family="Hopper")
FITS = Recommendation(
    gpu=H100S,
    package="pytorch-python313-cuda12_8-sm90-avx512",
    isa="avx512",
    reason="2 x NVIDIA H100 PCIe (sm90, Hopper); avx512: avx512f present",
)
NONE_FITS = Recommendation(
    gpu=GpuGroup(names=(), count=1, capability="6.1", sm="sm61", family="Pascal"),
    package=None,
    isa=None,
    reason="no sm61 here",
    alternatives=(Alternative(branch="cuda-12_9", package="pytorch-python313-cuda12_9-sm61-avx2"),),
)


def _detection(*recs: Recommendation) -> Detection:
    return Detection(
        branch="main",
        package="pytorch",
        python="3.13",
        workload="general",
        machine="x86_64",
        platform=Platform.X86_64_LINUX,
        recommendations=recs,
        warnings=("two capabilities",),
        driver="575.57.08",
    )


VERIFY = (
    "  verify: flox activate -- python3 -c 'import torch; "
    "print(torch.__version__, torch.version.cuda, torch.cuda.get_arch_list())'"
)


def test_text_names_the_package_why_install_lines_and_the_check(catalog: Catalog) -> None:
    data = answer.to_json(_detection(FITS, NONE_FITS), "acme", answer.Known.of(catalog))
    assert answer.render_text(data).splitlines() == [
        "pytorch-python313-cuda12_8-sm90-avx512",
        "  why: 2 x NVIDIA H100 PCIe (sm90, Hopper); avx512: avx512f present",
        "  pytorch 2.8.0, torchvision 0.23.0, CUDA 12.8, Python 3.13",
        "  needs NVIDIA driver >= 570 (this machine: 575.57.08)",
        "  flox install acme/pytorch-python313-cuda12_8-sm90-avx512",
        "  flox install acme/torchvision-python313-cuda12_8-sm90-avx512",
        VERIFY,
        "  expect: 2.8.0 12.8 ['sm_90']",
        "no pytorch variant on main fits compute capability 6.1 (sm61)",
        "  why: no sm61 here",
        "  nearest: pytorch-python313-cuda12_9-sm61-avx2 (branch cuda-12_9)",
        "  pytorch 2.9.1, torchvision 0.24.0, CUDA 12.9, Python 3.13",
        "  needs NVIDIA driver >= 575 (this machine: 575.57.08)",
        "  flox install acme/pytorch-python313-cuda12_9-sm61-avx2",
        "  flox install acme/torchvision-python313-cuda12_9-sm61-avx2",
        VERIFY,
        "  expect: 2.9.1 12.9 ['sm_61']",
    ]


def test_text_without_a_gpu_speaks_of_the_machine(catalog: Catalog) -> None:
    rec = Recommendation(gpu=None, package=None, isa=None, reason="no CPU-only build")
    data = answer.to_json(_detection(rec), "acme", answer.Known.of(catalog))
    assert answer.render_text(data) == (
        "no pytorch variant on main fits this machine\n  why: no CPU-only build\n"
    )


def test_text_offers_the_fallback_without_the_gpu(catalog: Catalog) -> None:
    rec = Recommendation(
        gpu=GpuGroup(names=("X",), count=1, capability="13.0", sm=None, family=None),
        package=None,
        isa=None,
        reason="unknown",
        fallback="pytorch-python313-cpu-avx512",
    )
    data = answer.to_json(_detection(rec), "acme", answer.Known.of(catalog))
    assert answer.render_text(data).splitlines()[-1] == (
        "  without the GPU: flox install acme/pytorch-python313-cpu-avx512"
    )


def test_the_stack_of_a_torchvision_variant_starts_with_its_torch(catalog: Catalog) -> None:
    known = answer.Known.of(catalog)
    data = answer.variant_json(known, "acme", "main", "torchvision-python313-cpu-avx2")
    assert data["installs"] == [
        "flox install acme/pytorch-python313-cpu-avx2",
        "flox install acme/torchvision-python313-cpu-avx2",
    ]
    assert data["versions"] == {"pytorch": "2.8.0", "torchvision": "0.23.0"}
    assert (data["cuda"], data["min_driver"], data["expect"]) == (None, None, "2.8.0 None []")
    # cuda-13_0 builds TorchVision for sm121 only: the others install torch alone.
    sm90 = answer.variant_json(known, "acme", "cuda-13_0", "pytorch-python313-cuda13_0-sm90-avx512")
    assert sm90["installs"] == ["flox install acme/pytorch-python313-cuda13_0-sm90-avx512"]
    assert (sm90["min_driver"], sm90["expect"]) == (580, "2.10.0 13.0 ['sm_90']")


def test_json_is_plain_data_with_the_outcome(catalog: Catalog) -> None:
    data = answer.to_json(_detection(FITS, NONE_FITS), "<org>", answer.Known.of(catalog))
    assert json.loads(json.dumps(data)) == data
    assert (data["platform"], data["ok"], data["exit_code"]) == ("x86_64-linux", True, 0)
    fits, none_fits = data["recommendations"]
    assert fits["gpu"] == {
        "name": "NVIDIA H100 PCIe",
        "names": ["NVIDIA H100 PCIe"],
        "count": 2,
        "capability": "9.0",
        "sm": "sm90",
        "family": "Hopper",
    }
    assert fits["install"] == "flox install <org>/pytorch-python313-cuda12_8-sm90-avx512"
    assert (none_fits["install"], none_fits["gpu"]["name"]) == (None, None)
    (alternative,) = none_fits["alternatives"]
    assert (alternative["branch"], alternative["package"]) == (
        "cuda-12_9",
        "pytorch-python313-cuda12_9-sm61-avx2",
    )
    assert none_fits["best"] == alternative
    assert fits["best"] == fits["variant"]
    assert data["warnings"] == ["two capabilities"]


@pytest.mark.parametrize(
    ("machine", "capabilities", "flags", "branch"),
    [
        ("x86_64", ["9.0", "6.1"], "avx,avx2,fma,f16c", "cuda-13_0"),
        ("aarch64", ["12.1"], "fphp,asimdhp,asimddp,sve,sve2", "main"),
        ("arm64-darwin", [], None, "cuda-12_9"),
    ],
)
def test_plain_facts_get_the_answer_detect_json_prints(
    run_cli: Callable[..., subprocess.CompletedProcess[str]],
    catalog: Catalog,
    machine: str,
    capabilities: list[str],
    flags: str | None,
    branch: str,
) -> None:
    """Whatever states a machine as plain facts gets, through detect, what the command says."""
    argv = ["detect", "--json", "--branch", branch, "--machine", machine, "--org", "acme"]
    if flags is not None:
        argv += ["--gpu-cc", ",".join(capabilities) or "none", "--cpu-flags", flags]
    printed = json.loads(run_cli(*argv).stdout)
    host = Host.described(
        machine=machine, capabilities=capabilities, cpu_flags=flags.split(",") if flags else ()
    )
    known = answer.Known.of(catalog)
    assert answer.to_json(detect(catalog, host, branch=branch), "acme", known) == printed
