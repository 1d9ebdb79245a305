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
    alternatives=(Alternative(branch="main", package="pytorch-python313-cuda12_8-sm61-avx2"),),
)


def _detection(*recs: Recommendation) -> Detection:
    return Detection(
        branch="cuda-13_0",
        package="pytorch",
        python="3.13",
        workload="general",
        machine="x86_64",
        platform=Platform.X86_64_LINUX,
        recommendations=recs,
        warnings=("two capabilities",),
    )


def test_text_names_the_package_why_and_install_line_or_what_did_not_fit() -> None:
    assert answer.render_text(_detection(FITS, NONE_FITS), "acme").splitlines() == [
        "pytorch-python313-cuda12_8-sm90-avx512",
        "  why: 2 x NVIDIA H100 PCIe (sm90, Hopper); avx512: avx512f present",
        "  flox install acme/pytorch-python313-cuda12_8-sm90-avx512",
        "no variant fits: compute capability 6.1 (sm61)",
        "  why: no sm61 here",
    ]


def test_text_without_a_gpu_speaks_of_the_machine() -> None:
    rec = Recommendation(gpu=None, package=None, isa=None, reason="no CPU-only build")
    assert answer.render_text(_detection(rec), "acme") == (
        "no variant fits: this machine\n  why: no CPU-only build\n"
    )


def test_json_is_plain_data_with_the_outcome() -> None:
    data = answer.to_json(_detection(FITS, NONE_FITS), "<org>")
    assert json.loads(json.dumps(data)) == data
    assert (data["platform"], data["ok"], data["exit_code"]) == ("x86_64-linux", False, 1)
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
    assert none_fits["alternatives"] == [
        {"branch": "main", "package": "pytorch-python313-cuda12_8-sm61-avx2"}
    ]
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
    assert answer.to_json(detect(catalog, host, branch=branch), "acme") == printed
