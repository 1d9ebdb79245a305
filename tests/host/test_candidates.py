"""candidates: every variant that could serve a host, each with why it fits or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.catalog.load import parse_catalog_text
from ci_tools.catalog.model import Catalog
from ci_tools.host import candidates, hostcpu, hostinfo
from ci_tools.host.candidates import CPU_ONLY, MPS, Fit, GpuGroup
from ci_tools.host.facts import Host, HostGpu
from tests.conftest import DATA


def cpu(name: str) -> frozenset[str]:
    return hostcpu.parse_cpuinfo((DATA / f"cpuinfo-{name}.txt").read_text())


def _fits(found: candidates.Candidates, branch: str, target: str) -> dict[str, Fit | None]:
    return {c.variant: (c.isa.fit if c.isa is not None else None) for c in found.on(branch, target)}


@pytest.mark.parametrize(
    ("isa", "workload", "fit", "missing"),
    [
        ("avx2", "general", Fit.FITS, ()),
        ("avx512", "general", Fit.MISSING_FLAGS, ("avx512f", "avx512dq", "avx512vl")),
        # Missing flags are the reason even for another workload's ISA: it cannot run at all.
        ("avx512bf16", "general", Fit.MISSING_FLAGS, ("avx512f", "avx512dq", "avx512vl")),
        ("armv9", "general", Fit.OTHER_PLATFORM, ()),
    ],
)
def test_judge_isa_on_a_haswell_with_some_avx512(
    catalog: Catalog, isa: str, workload: str, fit: Fit, missing: tuple[str, ...]
) -> None:
    # Haswell plus avx512bw and avx512_bf16: the verdict names the flags still missing, in order.
    host = Host(machine="x86_64", cpu_flags=cpu("haswell") | {"avx512bw", "avx512_bf16"})
    judged = candidates.judge_isa(catalog.isas[isa], host, workload)
    assert (judged.fit, judged.missing) == (fit, missing)


def test_judge_isa_by_workload(catalog: Catalog) -> None:
    host = Host(machine="x86_64", cpu_flags=cpu("sapphire-rapids"))
    bf16 = catalog.isas["avx512bf16"]
    assert candidates.judge_isa(bf16, host, "general").fit is Fit.OTHER_WORKLOAD
    assert candidates.judge_isa(bf16, host, "bf16-training").fit is Fit.FITS
    assert candidates.judge_isa(bf16, host, "int8-inference").fit is Fit.OTHER_WORKLOAD


def test_why_not(catalog: Catalog) -> None:
    haswell = Host(machine="x86_64", cpu_flags=cpu("haswell"))
    spr = Host(machine="x86_64", cpu_flags=cpu("sapphire-rapids"))
    assert candidates.judge_isa(catalog.isas["avx2"], haswell, "general").why_not is None
    assert (
        candidates.judge_isa(catalog.isas["avx512"], haswell, "general").why_not
        == "avx512 needs avx512f avx512dq avx512vl avx512bw"
    )
    assert (
        candidates.judge_isa(catalog.isas["avx512vnni"], spr, "general").why_not
        == "avx512vnni is for workload int8-inference"
    )
    assert (
        candidates.judge_isa(catalog.isas["armv9"], spr, "general").why_not
        == "armv9 is for aarch64-linux machines"
    )


def test_group_gpus(catalog: Catalog) -> None:
    smi = hostinfo.parse_nvidia_smi((DATA / "nvidia-smi-mixed.txt").read_text())
    unknown = (HostGpu(name=None, capability="13.0"), HostGpu(name="X", capability=None))
    assert candidates.group_gpus(catalog, (*smi, *unknown)) == (
        GpuGroup(
            names=("NVIDIA H100 PCIe",), count=2, capability="9.0", sm="sm90", family="Hopper"
        ),
        GpuGroup(
            names=("NVIDIA RTX A5000",), count=1, capability="8.6", sm="sm86", family="Ampere"
        ),
        GpuGroup(names=(), count=1, capability="13.0", sm=None, family=None),
        GpuGroup(names=("X",), count=1, capability=None, sm=None, family=None),
    )


def test_labels() -> None:
    assert GpuGroup(names=("A", "B"), count=3, capability="9.0", sm=None, family=None).label == (
        "3 x A + B"
    )
    assert GpuGroup(names=("A",), count=1, capability="9.0", sm=None, family=None).label == "A"
    assert GpuGroup(names=(), count=2, capability="9.0", sm=None, family=None).label == (
        "compute capability 9.0"
    )


def test_a_gpu_host_gets_its_sm_and_the_cpu_only_builds_of_every_branch(
    catalog: Catalog,
) -> None:
    host = Host.described(machine="x86_64", capabilities=["6.1"], cpu_flags=cpu("haswell"))
    found = candidates.gather(catalog, host, package="pytorch", workload="general")
    assert _fits(found, "main", "sm61") == {
        "pytorch-python313-cuda12_8-sm61-avx": Fit.FITS,
        "pytorch-python313-cuda12_8-sm61-avx2": Fit.FITS,
    }
    assert found.on("cuda-13_0", "sm61") == ()  # CUDA 13 dropped sm61
    assert _fits(found, "main", CPU_ONLY) == {
        "pytorch-python313-cpu-avx2": Fit.FITS,
        "pytorch-python313-cpu-avx512": Fit.MISSING_FLAGS,
        "pytorch-python313-cpu-avx512bf16": Fit.MISSING_FLAGS,
        "pytorch-python313-cpu-avx512vnni": Fit.MISSING_FLAGS,
        "pytorch-python313-cpu-armv8_2": Fit.OTHER_PLATFORM,
        "pytorch-python313-cpu-armv9": Fit.OTHER_PLATFORM,
    }
    assert {key[1] for key in found.by_target} == {"sm61", CPU_ONLY}
    assert {key[0] for key in found.by_target} == set(catalog.branches)
    (avx2,) = (c for c in found.on("main", CPU_ONLY) if c.fits)
    assert (avx2.branch, avx2.target, avx2.why_not) == ("main", CPU_ONLY, None)


def test_apple_silicon_gets_the_mps_builds_only(catalog: Catalog) -> None:
    found = candidates.gather(
        catalog, Host(machine="arm64-darwin"), package="pytorch", workload="general"
    )
    assert {key[1] for key in found.by_target} == {MPS}
    (mps,) = found.on("main", MPS)
    assert (mps.variant, mps.isa, mps.fits, mps.why_not) == (
        "pytorch-python313-darwin-mps",
        None,
        True,
        None,
    )


def test_a_machine_the_catalog_does_not_build_for_has_none(catalog: Catalog) -> None:
    host = Host.described(machine="ppc64le", capabilities=["9.0"])
    found = candidates.gather(catalog, host, package="pytorch", workload="general")
    assert found.by_target == {}
    assert [g.sm for g in found.gpus] == ["sm90"]


def test_an_unknown_gpu_has_no_candidates_of_its_own(catalog: Catalog) -> None:
    host = Host.described(machine="x86_64", capabilities=["13.0"], cpu_flags=cpu("zen4"))
    found = candidates.gather(catalog, host, package="torchvision", workload="general")
    assert {key[1] for key in found.by_target} == {CPU_ONLY}
    assert all(c.variant.startswith("torchvision-") for c in found.on("main", CPU_ONLY))


def test_only_the_newest_python_of_a_branch(repo_root: Path) -> None:
    text = (repo_root / "catalog.yaml").read_text()
    text = text.replace('python: ["3.13"]', 'python: ["3.12", "3.13"]', 1)
    two_pythons = parse_catalog_text(text, "catalog.yaml")
    assert two_pythons.branches["main"].python == ("3.12", "3.13")
    host = Host.described(machine="x86_64", cpu_flags=cpu("haswell"))
    found = candidates.gather(two_pythons, host, package="pytorch", workload="general")
    names = [c.variant for c in found.on("main", CPU_ONLY)]
    assert names and all(n.startswith("pytorch-python313-") for n in names)
