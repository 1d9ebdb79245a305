"""detect: seed 001's selection guide over realistic host fixtures and the shipped catalog."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.catalog.load import parse_catalog_text
from ci_tools.catalog.model import Catalog, Platform
from ci_tools.host import hostcpu, hostinfo
from ci_tools.host.detect import Alternative, Detection, Host, HostGpu, detect, workloads
from tests.conftest import DATA


def cpu(name: str) -> frozenset[str]:
    return hostcpu.parse_cpuinfo((DATA / f"cpuinfo-{name}.txt").read_text())


def gpus(*capabilities: str) -> tuple[HostGpu, ...]:
    return tuple(HostGpu(name=None, capability=c) for c in capabilities)


def machine_of(cpuinfo: str) -> str:
    return "aarch64" if cpuinfo in ("graviton2", "graviton3", "grace") else "x86_64"


@dataclass(frozen=True)
class Case:
    id: str
    cpuinfo: str
    caps: tuple[str, ...]
    expected: str | None  # the one recommended package, None when none fits
    branch: str = "main"
    workload: str = "general"
    package: str = "pytorch"
    says: tuple[str, ...] = ()  # what the reason must mention
    alternatives: tuple[tuple[str, str], ...] = ()


CASES = [
    # No GPU: the CPU-only variant, ISA by seed 001's table.
    Case("spr-cpu", "sapphire-rapids", (), "pytorch-python313-cpu-avx512",
         says=("no NVIDIA GPU", "avx512: avx512f avx512dq avx512vl avx512bw present",
               "avx512bf16 not chosen: workload general",
               "avx512vnni not chosen: workload general")),
    Case("spr-bf16", "sapphire-rapids", (), "pytorch-python313-cpu-avx512bf16",
         workload="bf16-training", says=("avx512vnni not chosen: workload bf16-training",)),
    Case("spr-int8", "sapphire-rapids", (), "pytorch-python313-cpu-avx512vnni",
         workload="int8-inference"),
    Case("haswell-cpu", "haswell", (), "pytorch-python313-cpu-avx2",
         says=("avx512 not available: needs avx512f avx512dq avx512vl avx512bw",)),
    # A workload ISA the host lacks falls back to the general choice and says why.
    Case("haswell-bf16", "haswell", (), "pytorch-python313-cpu-avx2", workload="bf16-training",
         says=("avx512bf16 not available", "wanted for bf16-training, using avx2")),
    Case("graviton2-cpu", "graviton2", (), "pytorch-python313-cpu-armv8_2",
         says=("armv9 not available: needs sve sve2",)),
    # Graviton3 (Neoverse V1) has SVE but not SVE2: armv9 does not run there.
    Case("graviton3-cpu", "graviton3", (), "pytorch-python313-cpu-armv8_2",
         says=("armv9 not available: needs sve sve2",)),
    Case("grace-cpu", "grace", (), "pytorch-python313-cpu-armv9", says=("armv9: sve sve2 present",)),
    # GPU + ISA.
    Case("zen4-h100", "zen4", ("9.0",), "pytorch-python313-cuda12_8-sm90-avx512",
         says=("sm90, Hopper",)),
    Case("zen4-h100-bf16", "zen4", ("9.0",), "pytorch-python313-cuda12_8-sm90-avx512bf16",
         workload="bf16-training"),
    Case("zen4-h100-int8", "zen4", ("9.0",), "pytorch-python313-cuda12_8-sm90-avx512vnni",
         workload="int8-inference"),
    Case("haswell-3090", "haswell", ("8.6",), "pytorch-python313-cuda12_8-sm86-avx2"),
    Case("graviton3-h100", "graviton3", ("9.0",), "pytorch-python313-cuda12_8-sm90-armv8_2"),
    Case("grace-h100", "grace", ("9.0",), "pytorch-python313-cuda12_8-sm90-armv9"),
    Case("grace-h100-12_9", "grace", ("9.0",), "pytorch-python313-cuda12_9-sm90-armv9",
         branch="cuda-12_9"),
    # Only ISAs the branch builds for that SM: sm61 has avx and avx2 only.
    Case("spr-sm61", "sapphire-rapids", ("6.1",), "pytorch-python313-cuda12_8-sm61-avx2",
         says=("avx512 not built for sm61 on main",)),
    Case("spr-sm61-int8", "sapphire-rapids", ("6.1",), "pytorch-python313-cuda12_8-sm61-avx2",
         workload="int8-inference",
         says=("avx512vnni not built for sm61 on main (wanted for int8-inference, using avx2)",)),
    Case("sandy-sm61", "sandy-bridge", ("6.1",), "pytorch-python313-cuda12_8-sm61-avx",
         says=("avx2 not available: needs avx2 fma f16c",)),
    # The branch lacks the SM: say so, name the branches that have it.
    Case("spr-sm61-cuda13", "sapphire-rapids", ("6.1",), None, branch="cuda-13_0",
         says=("cuda-13_0 (CUDA 13.0) has no sm61 pytorch", "sm61 needs CUDA <= 12.9"),
         alternatives=(("cuda-12_9", "pytorch-python313-cuda12_9-sm61-avx2"),
                       ("main", "pytorch-python313-cuda12_8-sm61-avx2"))),
    Case("grace-thor-main", "grace", ("11.0",), None,
         says=("main (CUDA 12.8) has no sm110 pytorch", "sm110 needs CUDA >= 13.0"),
         alternatives=(("cuda-13_0", "pytorch-python313-cuda13_0-sm110-armv9"),)),
    Case("grace-spark-main", "grace", ("12.1",), None,
         alternatives=(("cuda-13_0", "pytorch-python313-cuda13_0-sm121-armv9"),)),
    Case("spr-b300-main", "sapphire-rapids", ("10.3",), None,
         alternatives=(("cuda-12_9", "pytorch-python313-cuda12_9-sm103-avx512"),
                       ("cuda-13_0", "pytorch-python313-cuda13_0-sm103-avx512"))),
    # sm110 is ARM only: an x86 host gets nothing anywhere, and is told why.
    Case("spr-thor-main", "sapphire-rapids", ("11.0",), None,
         says=("no branch has one", "sm110 on cuda-13_0 is built only for armv8_2, armv9 "
               "(aarch64-linux), not for this x86_64-linux machine",
               "the CPU-only pytorch-python313-cpu-avx512 runs here without the GPU")),
    Case("spr-thor-cuda13", "sapphire-rapids", ("11.0",), None, branch="cuda-13_0",
         says=("built only for armv8_2, armv9",)),
    # A machine the branch builds nothing for (main has no cpu-avx).
    Case("sandy-cpu-main", "sandy-bridge", (), None,
         says=("the CPU-only pytorch on main is built for avx2, avx512",
               "avx2 needs avx2 fma f16c"),
         alternatives=(("cuda-12_9", "pytorch-python313-cpu-avx"),
                       ("cuda-13_0", "pytorch-python313-cpu-avx"))),
    Case("sandy-cpu-12_9", "sandy-bridge", (), "pytorch-python313-cpu-avx", branch="cuda-12_9"),
    Case("sandy-h100", "sandy-bridge", ("9.0",), None, says=("no branch has one",)),
    # GPUs the catalog does not know: no guess, the CPU variant offered instead.
    Case("spr-future-gpu", "sapphire-rapids", ("13.0",), None,
         says=("newer than any SM the catalog knows (newest: sm121, 12.1)",)),
    Case("spr-maxwell", "sapphire-rapids", ("5.2",), None,
         says=("older than any SM the catalog builds (oldest: sm61, 6.1): unsupported",)),
    Case("spr-volta", "sapphire-rapids", ("7.0",), None, says=("not one the catalog builds",)),
    # Other packages.
    Case("grace-spark-torchvision", "grace", ("12.1",),
         "torchvision-python313-cuda13_0-sm121-armv9", branch="cuda-13_0", package="torchvision"),
    Case("spr-torchvision-cuda13", "sapphire-rapids", (), None, branch="cuda-13_0",
         package="torchvision", says=("cuda-13_0 builds no CPU-only torchvision",),
         alternatives=(("cuda-12_9", "torchvision-python313-cpu-avx512"),
                       ("main", "torchvision-python313-cpu-avx512"))),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_detect(catalog: Catalog, case: Case) -> None:
    host = Host(
        machine=machine_of(case.cpuinfo), cpu_flags=cpu(case.cpuinfo), gpus=gpus(*case.caps)
    )
    result = detect(catalog, host, branch=case.branch, package=case.package, workload=case.workload)
    assert len(result.recommendations) == 1
    rec = result.recommendations[0]
    assert rec.package == case.expected, rec.reason
    # Something that fits on another branch is an answer too: exit 0.
    assert result.exit_code == (0 if case.expected or case.alternatives else 1)
    for text in case.says:
        assert text in rec.reason
    assert rec.alternatives == tuple(Alternative(branch=b, package=p) for b, p in case.alternatives)
    if case.expected is not None:
        assert rec.isa is not None
        assert rec.package.endswith(rec.isa)
    assert result.warnings == ()


def _only(result: Detection) -> str:
    assert len(result.recommendations) == 1
    reason = result.recommendations[0].reason
    return reason


def test_unknown_gpu_offers_the_cpu_variant(catalog: Catalog) -> None:
    host = Host(machine="x86_64", cpu_flags=cpu("zen4"), gpus=gpus("13.0"))
    rec = detect(catalog, host, branch="main").recommendations[0]
    assert rec.package is None
    assert rec.fallback == "pytorch-python313-cpu-avx512"
    assert rec.gpu is not None
    assert (rec.gpu.capability, rec.gpu.sm) == ("13.0", None)


def test_apple_silicon_gets_mps(catalog: Catalog) -> None:
    result = detect(catalog, Host(machine="arm64-darwin"), branch="cuda-12_9")
    assert result.platform is Platform.AARCH64_DARWIN
    assert [r.package for r in result.recommendations] == ["pytorch-python313-darwin-mps"]
    assert "Apple Silicon" in _only(result)


def test_unsupported_machine(catalog: Catalog) -> None:
    result = detect(catalog, Host(machine="x86_64-darwin", gpus=gpus("9.0")), branch="main")
    assert result.platform is None
    assert result.exit_code == 1
    assert "no variant is built for x86_64-darwin machines" in _only(result)
    assert result.recommendations[0].alternatives == ()


def test_several_gpus_of_one_capability_share_a_recommendation(catalog: Catalog) -> None:
    smi = hostinfo.parse_nvidia_smi((DATA / "nvidia-smi-8x-h100.txt").read_text())
    result = detect(catalog, Host(machine="x86_64", cpu_flags=cpu("zen4"), gpus=smi), branch="main")
    assert result.warnings == ()
    (rec,) = result.recommendations
    assert rec.package == "pytorch-python313-cuda12_8-sm90-avx512"
    assert rec.gpu is not None
    assert (rec.gpu.count, rec.gpu.names) == (8, ("NVIDIA H100 80GB HBM3",))
    assert rec.reason.startswith("8 x NVIDIA H100 80GB HBM3 (sm90, Hopper); avx512:")


def test_gpus_of_different_capabilities_get_one_recommendation_each(catalog: Catalog) -> None:
    smi = hostinfo.parse_nvidia_smi((DATA / "nvidia-smi-mixed.txt").read_text())
    host = Host(machine="x86_64", cpu_flags=cpu("sapphire-rapids"), gpus=smi)
    result = detect(catalog, host, branch="main")
    assert [r.package for r in result.recommendations] == [
        "pytorch-python313-cuda12_8-sm90-avx512",
        "pytorch-python313-cuda12_8-sm86-avx512",
    ]
    assert [r.gpu.count for r in result.recommendations if r.gpu] == [2, 1]
    (warning,) = result.warnings
    assert "2 compute capabilities (9.0 (NVIDIA H100 PCIe), 8.6 (NVIDIA RTX A5000))" in warning
    assert result.exit_code == 0


def test_mixed_gpus_pass_when_each_has_a_variant_somewhere(catalog: Catalog) -> None:
    host = Host(machine="x86_64", cpu_flags=cpu("sapphire-rapids"), gpus=gpus("9.0", "6.1"))
    result = detect(catalog, host, branch="cuda-13_0")
    assert [r.package for r in result.recommendations] == [
        "pytorch-python313-cuda13_0-sm90-avx512",
        None,
    ]
    assert result.recommendations[1].alternatives[0].branch == "cuda-12_9"
    assert result.exit_code == 0


def test_mixed_gpus_fail_when_one_has_no_variant_anywhere(catalog: Catalog) -> None:
    host = Host(machine="x86_64", cpu_flags=cpu("sapphire-rapids"), gpus=gpus("9.0", "11.0"))
    result = detect(catalog, host, branch="cuda-13_0")
    assert [r.package for r in result.recommendations] == [
        "pytorch-python313-cuda13_0-sm90-avx512",
        None,
    ]
    assert result.recommendations[1].fallback == "pytorch-python313-cpu-avx512"
    assert result.exit_code == 1


def test_gpu_without_capability(catalog: Catalog) -> None:
    smi = hostinfo.parse_nvidia_smi((DATA / "nvidia-smi-na.txt").read_text())
    result = detect(catalog, Host(machine="x86_64", cpu_flags=cpu("zen4"), gpus=smi), branch="main")
    assert result.exit_code == 1
    assert "NVIDIA Graphics Device: nvidia-smi reports no compute capability" in _only(result)
    assert "--gpu-cc" in _only(result)


def test_host_warnings_pass_through(catalog: Catalog) -> None:
    host = Host(machine="x86_64", cpu_flags=cpu("zen4"), warnings=("nvidia-smi failed",))
    assert detect(catalog, host, branch="main").warnings == ("nvidia-smi failed",)


def test_no_gpu_note_leads_the_reason(catalog: Catalog) -> None:
    host = Host(
        machine="x86_64", cpu_flags=cpu("zen4"), no_gpu_note="no NVIDIA GPU (nvidia-smi lists none)"
    )
    assert _only(detect(catalog, host, branch="main")).startswith(
        "no NVIDIA GPU (nvidia-smi lists none);"
    )


def test_empty_flags_fit_nothing(catalog: Catalog) -> None:
    result = detect(catalog, Host(machine="x86_64"), branch="cuda-12_9")
    assert result.exit_code == 1
    assert "avx needs avx" in _only(result)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"branch": "nope"}, 'unknown branch "nope"'),
        ({"branch": "main", "package": "tensorflow"}, 'unknown package "tensorflow"'),
        ({"branch": "main", "workload": "gaming"}, 'unknown workload "gaming"'),
    ],
)
def test_bad_input(catalog: Catalog, kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        detect(catalog, Host(machine="x86_64"), **kwargs)


def test_workloads_come_from_the_catalog(catalog: Catalog) -> None:
    assert workloads(catalog) == ("general", "bf16-training", "int8-inference")


def _catalog_with_avx10(repo_root: Path) -> Catalog:
    """The shipped catalog plus a made-up general ISA above avx512, built as CPU-only on main."""
    text = (repo_root / "catalog.yaml").read_text()
    avx10 = (
        "  avx10:\n"
        "    platform: x86_64-linux\n"
        "    description: AVX10\n"
        "    level: 5\n"
        "    compiler_flags: [-mavx10.1]\n"
        "    cpuinfo: [avx10]\n"
        "    torch_capability: AVX512\n"
    )
    text = text.replace("  armv8_2:\n", avx10 + "  armv8_2:\n", 1)
    text = text.replace(
        "        cpu: [avx2, avx512, avx512bf16, avx512vnni, armv8_2, armv9]\n",
        "        cpu: [avx2, avx512, avx512bf16, avx512vnni, avx10, armv8_2, armv9]\n",
        1,
    )
    return parse_catalog_text(text, "catalog.yaml")


def test_isa_choice_follows_the_catalog_not_a_list_in_code(repo_root: Path) -> None:
    catalog = _catalog_with_avx10(repo_root)
    flags = cpu("sapphire-rapids") | {"avx10"}
    rec = detect(catalog, Host(machine="x86_64", cpu_flags=flags), branch="main").recommendations[0]
    assert rec.package == "pytorch-python313-cpu-avx10"
    rec = detect(
        catalog, Host(machine="x86_64", cpu_flags=cpu("sapphire-rapids")), branch="main"
    ).recommendations[0]
    assert rec.package == "pytorch-python313-cpu-avx512"
    assert "avx10 not available: needs avx10" in rec.reason


UPSTREAM = Path(__file__).resolve().parents[1] / "data" / "upstream" / "pytorch-2.10-python313.yaml"


def _upstream() -> Catalog:
    return parse_catalog_text(UPSTREAM.read_text(), "pytorch-2.10-python313.yaml")


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        # Unknown driver: the branch's later toolkit, as before drivers were read.
        (None, "pytorch-python313-cuda13_1-sm90-avx512"),
        ("580.65.06", "pytorch-python313-cuda13_1-sm90-avx512"),
        # A 575 driver runs the CUDA 12.x toolkits of the branch (min_driver 550), not 13.x.
        ("575.57.08", "pytorch-python313-cuda12_9-sm90-avx512"),
        ("550", "pytorch-python313-cuda12_9-sm90-avx512"),
    ],
)
def test_the_driver_picks_the_toolkit_it_runs(driver: str | None, expected: str) -> None:
    catalog = _upstream()
    host = Host.described(
        machine="x86_64", capabilities=["9.0"], cpu_flags=cpu("zen4"), driver=driver
    )
    (rec,) = detect(catalog, host, branch="pytorch-2.10-python313").recommendations
    assert rec.package == expected, rec.reason


def test_a_driver_too_old_for_every_toolkit_says_so() -> None:
    host = Host.described(
        machine="x86_64", capabilities=["9.0"], cpu_flags=cpu("zen4"), driver="535.1"
    )
    result = detect(_upstream(), host, branch="pytorch-2.10-python313")
    (rec,) = result.recommendations
    assert rec.package is None
    assert (
        "sm90 on pytorch-2.10-python313 needs NVIDIA driver >= 550 (this machine has 535.1)"
        in rec.reason
    )
    assert rec.fallback == "pytorch-python313-cpu-avx512"
    assert result.exit_code == 1


def test_a_driver_too_old_for_the_branch_points_to_one_it_runs(catalog: Catalog) -> None:
    host = Host.described(
        machine="x86_64", capabilities=["9.0"], cpu_flags=cpu("zen4"), driver="575.57.08"
    )
    result = detect(catalog, host, branch="cuda-13_0")
    (rec,) = result.recommendations
    assert rec.package is None
    assert "needs NVIDIA driver >= 580 (this machine has 575.57.08)" in rec.reason
    assert [(a.branch, a.package) for a in rec.alternatives] == [
        ("cuda-12_9", "pytorch-python313-cuda12_9-sm90-avx512"),
        ("main", "pytorch-python313-cuda12_8-sm90-avx512"),
    ]
    assert (result.ok, result.exit_code, result.driver) == (True, 0, "575.57.08")


def test_the_driver_does_not_judge_cpu_variants(catalog: Catalog) -> None:
    host = Host.described(machine="x86_64", cpu_flags=cpu("zen4"), driver="400")
    (rec,) = detect(catalog, host, branch="cuda-13_0").recommendations
    assert rec.package == "pytorch-python313-cpu-avx512"


def test_python_is_asked_or_the_newest(catalog: Catalog) -> None:
    host = Host.described(machine="x86_64", cpu_flags=cpu("zen4"))
    assert detect(catalog, host, branch="main", python="3.13").python == "3.13"
    assert detect(catalog, host, branch="main").python == "3.13"
    with pytest.raises(
        InputError, match=re.escape('branch main builds no Python "3.12"; it builds 3.13')
    ):
        detect(catalog, host, branch="main", python="3.12")


def test_another_python_on_one_branch_only(repo_root: Path) -> None:
    text = (repo_root / "catalog.yaml").read_text()
    text = text.replace(
        '    cuda: "12.8"\n    python: ["3.13"]',
        '    cuda: "12.8"\n    python: ["3.12", "3.13"]',
        1,
    )
    catalog = parse_catalog_text(text, "catalog.yaml")
    host = Host.described(machine="aarch64", capabilities=["12.1"], cpu_flags=cpu("grace"))
    # cuda-13_0 builds sm121, but not for Python 3.12: nothing to point to, the CPU build instead.
    (rec,) = detect(catalog, host, branch="main", python="3.12").recommendations
    assert (rec.package, rec.alternatives) == (None, ())
    assert rec.fallback == "pytorch-python312-cpu-armv9"
    (rec,) = detect(catalog, host, branch="main").recommendations
    assert rec.alternatives[0].package == "pytorch-python313-cuda13_0-sm121-armv9"
    host = Host.described(machine="x86_64", cpu_flags=cpu("zen4"))
    (rec,) = detect(catalog, host, branch="main", python="3.12").recommendations
    assert rec.package == "pytorch-python312-cpu-avx512"
