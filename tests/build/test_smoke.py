"""`ci-tools test`: the pure evaluation (facts shaped like real torch builds), the host guard,
the probe's output protocol, and real runs against the CPU torch installed here."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_tools.base import proc
from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import Check, Status
from ci_tools.build.smoke import binary, closure, runner
from ci_tools.build.smoke.evaluate import check_names, evaluate, skip_all, version_matches
from ci_tools.build.smoke.expect import CPU_CAPABILITY_ORDER, Expectations, expectations_for
from ci_tools.catalog import variants
from ci_tools.catalog.model import Catalog
from ci_tools.host import hostcpu
from tests.conftest import REPO_ROOT

CliRunner = Callable[..., subprocess.CompletedProcess[str]]

GPU = "pytorch-python313-cuda12_8-sm90-avx512"
GPU_VISION = "torchvision-python313-cuda12_8-sm90-avx512"
SM61 = "pytorch-python313-cuda12_8-sm61-avx2"
CPU = "pytorch-python313-cpu-avx2"
MPS = "pytorch-python313-darwin-mps"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def expect(catalog: Catalog, name: str, branch: str = "main") -> Expectations:
    return expectations_for(variants.find(catalog, branch, name))


def ok(detail: str) -> dict[str, Any]:
    return {"ok": True, "detail": detail}


def h100_facts(**changes: Any) -> dict[str, Any]:
    """What the probe reports for a matching sm90 build of branch main on an H100."""
    facts: dict[str, Any] = {
        "python": "3.13.5",
        "executable": "/nix/store/x-python3-3.13.5/bin/python3.13",
        "torch.origin": "/nix/store/y-torch/lib/python3.13/site-packages/torch/__init__.py",
        "import:torch": ok("/nix/store/y-torch/lib/python3.13/site-packages/torch/__init__.py"),
        "torch.version": "2.8.0",
        "torch.version.cuda": "12.8",
        "torch.arch_list": ["sm_90"],
        "torch.cudnn": True,
        "cpu.capability": "AVX512",
        "work:cpu_mlp": ok("forward+backward on cpu, loss 0.0578"),
        "work:cpu_compile": ok("torch.compile (inductor) on cpu matches eager"),
        "sass": sass_fact({"libtorch_cuda.so": (["sm_90"], [])}),
        "cuda.available": True,
        "cuda.devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}],
        "cuda.device": {"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"},
        "work:gpu_mlp": ok("forward+backward on cuda:0, loss 0.0578"),
        "work:gpu_matmul": ok("1000x1000 matmul on cuda:0 matches the CPU (max error 3e-05)"),
        "work:gpu_compile": ok("torch.compile (inductor) on cuda:0 matches eager"),
    }
    facts.update(changes)
    return facts


def sass_fact(libraries: dict[str, tuple[list[str], list[str]]]) -> dict[str, Any]:
    return {
        "tool": "/usr/local/cuda/bin/cuobjdump",
        "lib_dir": "/nix/store/y-torch/lib/python3.13/site-packages/torch/lib",
        "libraries": {name: {"sass": s, "ptx": p} for name, (s, p) in libraries.items()},
    }


def by_name(checks: tuple[Check, ...]) -> dict[str, Check]:
    return {c.name: c for c in checks}


# --- the pure evaluation ------------------------------------------------------------------


def expected_status(check: results.Check) -> Status:
    """A passing check: proven from the files (static) or run (passed)."""
    return Status.STATIC if check.name in ("sass", "isa-code") else Status.PASSED


def test_matching_gpu_build_passes_every_check(catalog: Catalog) -> None:
    checks = evaluate(h100_facts(), expect(catalog, GPU))
    assert [c.name for c in checks] == [
        "import-torch", "torch-version", "cuda-version", "arch-list", "sass", "cudnn",
        "cpu-capability", "cpu-mlp", "cpu-compile", "gpu-mlp", "gpu-matmul", "gpu-compile",
    ]  # fmt: skip
    assert all(c.status is expected_status(c) for c in checks), checks
    assert results.test_status(checks) is Status.PASSED


def test_fat_binary_fails(catalog: Catalog) -> None:
    check = by_name(
        evaluate(h100_facts(**{"torch.arch_list": ["sm_80", "sm_90"]}), expect(catalog, GPU))
    )
    assert check["arch-list"].status is Status.FAILED
    assert (
        check["arch-list"].detail
        == "fat binary: compiled for [sm_80, sm_90], expected exactly [sm_90]"
    )


def test_pip_style_fat_binary_with_ptx_fails(catalog: Catalog) -> None:
    archs = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "compute_90"]
    check = by_name(evaluate(h100_facts(**{"torch.arch_list": archs}), expect(catalog, GPU)))
    assert check["arch-list"].status is Status.FAILED
    assert check["arch-list"].detail.startswith("fat binary: ")


def test_wrong_single_arch_fails(catalog: Catalog) -> None:
    check = by_name(evaluate(h100_facts(**{"torch.arch_list": ["sm_80"]}), expect(catalog, GPU)))
    assert check["arch-list"].status is Status.FAILED
    assert check["arch-list"].detail == "compiled for [sm_80], expected exactly [sm_90]"


def test_same_arch_ptx_is_not_a_fat_binary(catalog: Catalog) -> None:
    # nixpkgs' cudaForwardCompat adds PTX of the highest target: no other GPU's code.
    facts = h100_facts(**{"torch.arch_list": ["sm_90", "compute_90"]})
    assert by_name(evaluate(facts, expect(catalog, GPU)))["arch-list"].status is Status.PASSED


def test_wrong_cuda_fails(catalog: Catalog) -> None:
    check = by_name(evaluate(h100_facts(**{"torch.version.cuda": "12.4"}), expect(catalog, GPU)))
    assert check["cuda-version"].status is Status.FAILED
    assert check["cuda-version"].detail == "torch.version.cuda is 12.4, expected 12.8"


def test_cpu_only_torch_in_a_gpu_variant_fails(catalog: Catalog) -> None:
    facts = h100_facts(**{"torch.version.cuda": None, "torch.arch_list": [], "torch.cudnn": False})
    check = by_name(evaluate(facts, expect(catalog, GPU)))
    assert check["cuda-version"].status is Status.FAILED
    assert check["arch-list"].status is Status.FAILED
    assert check["cudnn"].status is Status.FAILED


def test_wrong_version_fails(catalog: Catalog) -> None:
    check = by_name(evaluate(h100_facts(**{"torch.version": "2.9.1+cu128"}), expect(catalog, GPU)))
    assert check["torch-version"].status is Status.FAILED
    assert check["torch-version"].detail == "torch.__version__ is 2.9.1+cu128, expected 2.8.0"


@pytest.mark.parametrize(
    ("reported", "expected", "matches"),
    [
        ("2.10.0+cu130", "2.10.0", True),
        ("2.10.0", "2.10", True),
        ("2.8.0", "2.8.0", True),
        ("2.13.0+cpu", "2.8.0", False),
        ("2.1.0", "2.10", False),
        ("2.10.0a0+git1234", "2.10.0", False),
    ],
)
def test_version_matching(reported: str, expected: str, matches: bool) -> None:
    assert version_matches(reported, expected) is matches


def test_cudnn_must_be_absent_below_sm75(catalog: Catalog) -> None:
    sm61 = expect(catalog, SM61)
    facts = h100_facts(**{"torch.arch_list": ["sm_61"], "cpu.capability": "AVX2"})
    assert by_name(evaluate(facts, sm61))["cudnn"].status is Status.FAILED
    facts["torch.cudnn"] = False
    assert by_name(evaluate(facts, sm61))["cudnn"].status is Status.PASSED


def test_cpu_capability_below_the_isa_fails(catalog: Catalog) -> None:
    check = by_name(evaluate(h100_facts(**{"cpu.capability": "AVX2"}), expect(catalog, GPU)))
    assert check["cpu-capability"].status is Status.FAILED
    assert "below AVX512" in check["cpu-capability"].detail


def test_cpu_capability_above_the_isa_passes(catalog: Catalog) -> None:
    facts = h100_facts(**{"cpu.capability": "AVX512"})
    avx2 = expect(catalog, "pytorch-python313-cuda12_8-sm90-avx2")
    assert by_name(evaluate(facts, avx2))["cpu-capability"].status is Status.PASSED


def test_unknown_cpu_capability_fails(catalog: Catalog) -> None:
    check = by_name(evaluate(h100_facts(**{"cpu.capability": "AVX10"}), expect(catalog, GPU)))
    assert check["cpu-capability"].status is Status.FAILED
    assert "'AVX10'" in check["cpu-capability"].detail


def test_every_isa_names_a_capability_of_its_platform(catalog: Catalog) -> None:
    for isa in catalog.isas.values():
        levels = CPU_CAPABILITY_ORDER[isa.platform]
        assert any(isa.torch_capability in level for level in levels), isa.name


def test_gpu_checks_skip_without_a_gpu(catalog: Catalog) -> None:
    facts = h100_facts(**{"cuda.available": False, "cuda.devices": []})
    for key in ("cuda.device", "work:gpu_mlp", "work:gpu_matmul"):
        del facts[key]
    check = by_name(evaluate(facts, expect(catalog, GPU)))
    assert check["gpu-mlp"].status is Status.SKIPPED
    assert "no CUDA GPU visible" in check["gpu-mlp"].detail
    assert results.test_status(tuple(check.values())) is Status.PASSED


def test_gpu_checks_skip_on_another_gpu(catalog: Catalog) -> None:
    facts = h100_facts(
        **{"cuda.devices": [{"index": 0, "name": "NVIDIA A100", "capability": "8.0"}]}
    )
    for key in ("cuda.device", "work:gpu_mlp", "work:gpu_matmul"):
        del facts[key]
    check = by_name(evaluate(facts, expect(catalog, GPU)))
    assert check["gpu-matmul"].status is Status.SKIPPED
    assert (
        check["gpu-matmul"].detail
        == "no sm90 (capability 9.0) GPU here; visible: NVIDIA A100 (8.0)"
    )


def test_failed_gpu_work_fails(catalog: Catalog) -> None:
    error = {"ok": False, "detail": "RuntimeError: CUDA error: no kernel image is available"}
    check = by_name(evaluate(h100_facts(**{"work:gpu_matmul": error}), expect(catalog, GPU)))
    assert check["gpu-matmul"].status is Status.FAILED
    assert "no kernel image" in check["gpu-matmul"].detail


def test_torchvision_checks(catalog: Catalog) -> None:
    facts = h100_facts(
        **{
            "import:torchvision": ok("/nix/store/z-torchvision/.../torchvision/__init__.py"),
            "torchvision.version": "0.23.0+cu128",
            "work:gpu_nms": ok("torchvision.ops.nms on cuda:0 kept [0, 2]"),
        }
    )
    checks = evaluate(facts, expect(catalog, GPU_VISION))
    names = [c.name for c in checks]
    assert {"import-torchvision", "torchvision-version", "gpu-nms"} <= set(names)
    assert all(c.status is expected_status(c) for c in checks), checks
    facts["torchvision.version"] = "0.24.0"
    assert (
        by_name(evaluate(facts, expect(catalog, GPU_VISION)))["torchvision-version"].status
        is Status.FAILED
    )


def test_torchvision_that_does_not_import(catalog: Catalog) -> None:
    facts = h100_facts(**{"import:torchvision": {"ok": False, "detail": "ImportError: libc10.so"}})
    check = by_name(evaluate(facts, expect(catalog, GPU_VISION)))
    assert check["import-torchvision"].status is Status.FAILED
    assert check["torchvision-version"].status is Status.SKIPPED
    assert check["gpu-nms"].detail == "needs torchvision, which did not import"


def test_mps_build(catalog: Catalog) -> None:
    mps = expect(catalog, MPS)
    facts = {
        "import:torch": ok("/x/torch/__init__.py"),
        "torch.version": "2.8.0",
        "torch.version.cuda": None,
        "torch.arch_list": [],
        "torch.cudnn": False,
        "cpu.capability": "DEFAULT",
        "work:cpu_mlp": ok("forward+backward on cpu"),
        "work:cpu_compile": ok("torch.compile (inductor) on cpu matches eager"),
        "mps.available": True,
        "work:mps_matmul": ok("1000x1000 matmul on mps matches the CPU"),
    }
    checks = by_name(evaluate(facts, mps))
    assert "cpu-capability" not in checks and "cudnn" not in checks
    assert all(c.status is expected_status(c) for c in checks.values()), checks
    facts["mps.available"] = False
    assert by_name(evaluate(facts, mps))["mps"].status is Status.FAILED


def test_a_crash_fails_the_unreported_checks(catalog: Catalog) -> None:
    facts = {k: v for k, v in h100_facts().items() if not k.startswith(("work:", "cuda."))}
    crash = "the interpreter was killed by SIGILL during work:cpu_mlp"
    check = by_name(evaluate(facts, expect(catalog, GPU), crash))
    assert check["torch-version"].status is Status.PASSED
    assert check["cpu-mlp"].status is Status.FAILED
    assert check["cpu-mlp"].detail == f"no result for work:cpu_mlp: {crash}"


def test_torch_that_does_not_import_skips_the_rest(catalog: Catalog) -> None:
    facts = {
        "import:torch": {"ok": False, "detail": "OSError: libcudart.so.12: cannot open"},
        "sass": sass_fact({"libtorch_cuda.so": (["sm_90"], [])}),
    }
    checks = evaluate(facts, expect(catalog, GPU))
    assert checks[0].status is Status.FAILED and "libcudart" in checks[0].detail
    # cuobjdump reads the file: its proof stands whether or not torch imports.
    assert by_name(checks)["sass"].status is Status.STATIC
    assert {c.status for c in checks[1:] if c.name != "sass"} == {Status.SKIPPED}


def test_skip_all_names_every_check(catalog: Catalog) -> None:
    gpu = expect(catalog, GPU_VISION)
    skipped = skip_all(gpu, "why")
    assert tuple(c.name for c in skipped) == check_names(gpu)
    assert {(c.status, c.detail) for c in skipped} == {(Status.SKIPPED, "why")}


def test_expectations_from_the_catalog(catalog: Catalog) -> None:
    gpu = expect(catalog, GPU_VISION, "main")
    assert (gpu.torch_version, gpu.cuda, gpu.arch, gpu.cudnn) == ("2.8.0", "12.8", "sm_90", True)
    assert gpu.dependents[0].import_name == "torchvision" and gpu.dependents[0].version == "0.23.0"
    assert gpu.probe_config() == {
        "imports": ["torchvision"],
        "gpu_capability": "9.0",
        "nms": True,
        "mps": False,
        "compile": True,
        "isa_kernels": [],
    }
    assert expect(catalog, "pytorch-python313-cpu-avx512bf16").isa_kernels == ("bf16_matmul",)
    assert expect(catalog, "pytorch-python313-cpu-avx512vnni").isa_kernels == ("int8_linear",)
    cpu = expect(catalog, "pytorch-python313-cpu-avx512", "cuda-13_0")
    assert (cpu.torch_version, cpu.cuda, cpu.arch, cpu.cpu_capability) == (
        "2.10.0",
        None,
        None,
        "AVX512",
    )
    assert cpu.cpuinfo == ("avx512f", "avx512dq", "avx512vl", "avx512bw")
    assert expect(catalog, MPS).probe_config()["mps"] is True


# --- the host guard and the probe's protocol ------------------------------------------------


def test_host_guard(catalog: Catalog) -> None:
    avx512 = expect(catalog, GPU)
    flags = frozenset({"avx512f", "avx512dq", "avx512vl", "avx512bw"})
    assert runner.host_guard(avx512, "x86_64-linux", flags) is None
    assert runner.host_guard(avx512, "aarch64-linux", flags) == (
        "a x86_64-linux build cannot run on this aarch64-linux host"
    )
    reason = runner.host_guard(avx512, "x86_64-linux", {"avx2", "avx512f"})
    assert reason is not None and reason.startswith(
        "this host's CPU lacks avx512dq avx512vl avx512bw"
    )


def test_platform_mismatch_runs_nothing(catalog: Catalog) -> None:
    smoke = runner.smoke_test(
        expect(catalog, GPU),
        "/nonexistent/python3",
        host_platform="aarch64-linux",
        host_flags=(),
        env=os.environ,
    )
    assert smoke.interpreter is None
    assert {c.status for c in smoke.checks} == {Status.SKIPPED}


def test_missing_cpu_flags_skip_every_check_after_preflight(catalog: Catalog) -> None:
    if not HAS_TORCH:
        pytest.skip("torch is not importable here")
    # No cuobjdump here (a GPU machine has one: then `sass` is judged, see below).
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    env["PATH"] = str(Path(sys.executable).parent)
    smoke = runner.smoke_test(
        expect(catalog, GPU),
        sys.executable,
        host_platform="x86_64-linux",
        host_flags={"avx2"},
        env=env,
    )
    assert smoke.interpreter is not None
    # objdump reads libtorch_cpu.so: its proof stands where the build must not run.
    assert {c.status for c in smoke.checks if c.name != "isa-code"} == {Status.SKIPPED}
    assert "lacks avx512f" in smoke.checks[0].detail
    assert "cuobjdump is not on PATH" in by_name(smoke.checks)["sass"].detail


def result(
    returncode: int, stdout: str = "", stderr: str = "", timed_out: bool = False
) -> proc.CommandResult:
    return proc.CommandResult(
        argv=("python3",),
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        seconds=12.0,
        timed_out=timed_out,
    )


def test_parse_output_ignores_noise_and_tracks_the_pending_step() -> None:
    text = "\n".join(
        [
            "some warning torch printed",
            'CI-TOOLS-SMOKE {"fact": "python", "value": "3.13.5"}',
            'CI-TOOLS-SMOKE {"begin": "import:torch"}',
            'CI-TOOLS-SMOKE {"fact": "import:torch", "value": {"ok": true, "detail": "x"}}',
            'CI-TOOLS-SMOKE {"begin": "work:cpu_mlp"}',
            "CI-TOOLS-SMOKE {not json",
        ]
    )
    facts, pending, done = runner.parse_output(text)
    assert facts == {"python": "3.13.5", "import:torch": {"ok": True, "detail": "x"}}
    assert (pending, done) == ("work:cpu_mlp", False)


def test_crash_reasons() -> None:
    assert runner.crash_reason(result(0), None, True) is None
    assert runner.crash_reason(result(-4), "work:cpu_mlp", False) == (
        "the interpreter was killed by SIGILL during work:cpu_mlp"
    )
    assert runner.crash_reason(result(-1, timed_out=True), "work:gpu_matmul", False) == (
        "the interpreter timed out after 12 s during work:gpu_matmul"
    )
    assert runner.crash_reason(
        result(1, stderr="Traceback\nRuntimeError: boom\n"), None, False
    ) == ("the interpreter exited with status 1: Traceback | RuntimeError: boom")


def test_probe_env_masks_the_dispatch_override() -> None:
    assert runner.probe_env({"ATEN_CPU_CAPABILITY": "default", "PATH": "/bin"}) == {"PATH": "/bin"}


def test_interpreter_in_a_result(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="build it first"):
        closure.interpreter_in(tmp_path / "result-x", "x", "3.13")
    python = _script(tmp_path / "result-x" / "bin" / "python3", "#!/bin/sh\n")
    assert closure.interpreter_in(tmp_path / "result-x", "x", "3.13") == closure.Launch(
        python=str(python)
    )


# --- real runs: the CPU torch installed here, and interpreters that are not usable -----------


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


HOST_PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def host_catalog(tmp_path_factory: pytest.TempPathFactory) -> str:
    """This catalog with this interpreter's Python added to every branch: `test --python
    sys.executable` must name a variant of that Python (another is refused, exit 2)."""
    folder = tmp_path_factory.mktemp("host-catalog")
    text = (REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    if HOST_PY != "3.13":
        text = text.replace('python: ["3.13"]', f'python: ["3.13", "{HOST_PY}"]')
    (folder / "catalog.yaml").write_text(text, encoding="utf-8")
    (folder / "nix").symlink_to(REPO_ROOT / "nix")
    return str(folder / "catalog.yaml")


def _host(name: str) -> str:
    """The variant of this interpreter's Python (in `host_catalog`)."""
    return name.replace("python313", "python" + HOST_PY.replace(".", ""))


def _cpu_variant() -> str:
    """The CPU variant of this host's platform; its flags decide whether checks can run."""
    return "pytorch-python313-cpu-armv8_2" if hostcpu.host_platform() == "aarch64-linux" else CPU


def _host_runs(catalog: Catalog, name: str) -> bool:
    return (
        runner.host_guard(expect(catalog, name), hostcpu.host_platform(), hostcpu.read_cpu_flags())
        is None
    )


def _lines(stdout: str) -> dict[str, tuple[str, str]]:
    out = {}
    for line in stdout.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) >= 2 and parts[0] in {"passed", "failed", "skipped"}:
            out[parts[1]] = (parts[0], parts[2] if len(parts) > 2 else "")
    return out


def _reported(python: str) -> dict[str, Any]:
    """What the interpreter under test says of its torch: PyPI's CUDA wheel reports
    `2.13.0+cu130` and CUDA 13.0 where its metadata says 2.13.0, the CPU wheel `2.13.0+cpu`."""
    code = (
        "import json, torch; print(json.dumps({'version': torch.__version__, "
        "'cuda': torch.version.cuda, 'archs': torch._C._cuda_getArchFlags() "
        "if hasattr(torch._C, '_cuda_getArchFlags') else None}))"
    )
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def _counted(lines: dict[str, tuple[str, str]]) -> str:
    statuses = [status for status, _ in lines.values()]
    return ", ".join(f"{statuses.count(s)} {s}" for s in ("passed", "static", "failed", "skipped"))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not importable here")
def test_real_cpu_torch_against_a_cpu_variant(
    run_cli: CliRunner, catalog: Catalog, tmp_path: Path, host_catalog: str
) -> None:
    name = _host(_cpu_variant())
    record = tmp_path / "record.json"
    cli = run_cli(
        "test", "--python", sys.executable, "--branch", "main", name, "--result-json",
        str(record), "--import-runs", "3", "--catalog", host_catalog,
    )  # fmt: skip
    assert "Traceback" not in cli.stderr, cli.stderr
    lines = _lines(cli.stdout)
    if not _host_runs(catalog, _cpu_variant()):
        assert cli.returncode == 0
        assert {status for status, _ in lines.values()} == {"skipped"}
        return
    torch = _reported(sys.executable)
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert lines["torch-version"] == (
        "failed",
        f"torch.__version__ is {torch['version']}, expected 2.8.0",
    )
    assert lines["import-torch"][0] == "passed"
    if torch["cuda"] is None:
        assert lines["cuda-version"] == (
            "passed",
            "torch.version.cuda is None, as a CPU build must",
        )
        assert lines["arch-list"] == (
            "passed",
            "compiled for no CUDA architecture, as a CPU build must",
        )
    else:  # a CUDA wheel is not a CPU build, whatever the catalog's variant says
        assert lines["cuda-version"] == (
            "failed",
            f"torch.version.cuda is {torch['cuda']}, expected None for a CPU build",
        )
        assert lines["arch-list"][0] == "failed"
    assert lines["cpu-capability"][0] == "passed"
    assert lines["cpu-mlp"][0] == "passed" and "forward+backward on cpu" in lines["cpu-mlp"][1]
    assert lines["cpu-compile"][0] == "passed", lines["cpu-compile"]
    assert lines["cpu-compile"][1].startswith("torch.compile (inductor) on cpu matches eager")
    assert f"failed: {name}: {_counted(lines)}" in cli.stdout
    data = json.loads(record.read_text(encoding="utf-8"))
    assert data["schema"] == 2 and data["variant"] == name and data["build"] is None
    assert data["test"]["status"] == "failed"
    assert {c["name"]: c["status"] for c in data["test"]["checks"]}["torch-version"] == "failed"
    figures = data["test"]["figures"]
    sizes = {lib["name"]: lib["bytes"] for lib in figures["libraries"]}
    torch_lib = Path(torch_origin()).parent / "lib"
    assert sizes["libtorch_cpu.so"] == (torch_lib / "libtorch_cpu.so").stat().st_size
    assert figures["import_runs"] == 3 and figures["import_seconds"] > 0
    # site-packages/torch as a whole: the libraries and everything beside them.
    package = Path(torch_origin()).parent
    on_disk = sum(
        p.stat().st_size for p in package.rglob("*") if p.is_file() and not p.is_symlink()
    )
    assert figures["package_bytes"] == on_disk > sizes["libtorch_cpu.so"]
    assert results.load(record).test is not None


def torch_origin() -> str:
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    return spec.origin


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not importable here")
def test_real_cpu_torch_against_a_gpu_variant(
    run_cli: CliRunner, catalog: Catalog, host_catalog: str
) -> None:
    name = "pytorch-python313-cuda12_8-sm90-avx2"
    if not _host_runs(catalog, name):
        pytest.skip("this host cannot run an x86_64 avx2 build")
    cli = run_cli(
        "test", "--python", sys.executable, "--branch", "main", _host(name), "--import-runs", "0",
        "--catalog", host_catalog,
    )  # fmt: skip
    lines = _lines(cli.stdout)
    torch = _reported(sys.executable)
    assert cli.returncode == 1
    if torch["cuda"] is None:
        assert lines["cuda-version"] == (
            "failed",
            "torch.version.cuda is None (a CPU-only torch), expected 12.8",
        )
        assert lines["cudnn"][0] == "failed"
    else:  # PyPI's CUDA wheel: a CUDA build, of another CUDA and for every GPU
        assert lines["cuda-version"] == (
            "failed",
            f"torch.version.cuda is {torch['cuda']}, expected 12.8",
        )
    assert lines["arch-list"][0] == "failed"
    if lines["gpu-mlp"][0] == "skipped":
        assert "GPU" in lines["gpu-mlp"][1]
    assert "time     import torch" not in cli.stdout  # --import-runs 0


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not importable here")
@pytest.mark.parametrize(
    ("isa", "check", "flag"),
    [
        ("avx512bf16", "bf16-matmul", "avx512_bf16"),
        ("avx512vnni", "int8-linear", "avx512_vnni"),
    ],
)
def test_real_isa_kernels(
    run_cli: CliRunner, catalog: Catalog, isa: str, check: str, flag: str, host_catalog: str
) -> None:
    name = f"pytorch-python313-cpu-{isa}"
    cli = run_cli(
        "test", "--python", sys.executable, "--branch", "main", _host(name), "--import-runs", "0",
        "--catalog", host_catalog,
    )  # fmt: skip
    assert "Traceback" not in cli.stderr, cli.stderr
    lines = _lines(cli.stdout)
    if flag not in hostcpu.read_cpu_flags() or not _host_runs(catalog, name):
        # Never run: the guard skips every check, naming the flag, rather than risk SIGILL.
        assert lines[check][0] == "skipped" and "lacks" in lines[check][1], lines[check]
        assert cli.returncode == 0
        return
    assert lines[check][0] == "passed", lines[check]
    assert "of fp32 (tolerance" in lines[check][1]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not importable here")
def test_real_compile_without_a_compiler_fails_with_inductors_message(
    run_cli: CliRunner, catalog: Catalog, tmp_path: Path, host_catalog: str
) -> None:
    # What a closure scrub that removed the compiler leaves: inductor's own configured
    # compiler (torch._inductor.config.cpp.cxx reads $CXX) does not exist.
    name = _cpu_variant()
    if not _host_runs(catalog, name):
        pytest.skip("this host cannot run the CPU variant's code")
    cli = run_cli(
        "test", "--python", sys.executable, "--branch", "main", _host(name), "--import-runs", "0",
        "--catalog", host_catalog, env={"CXX": str(tmp_path / "no-such-c++")},
    )  # fmt: skip
    assert "Traceback" not in cli.stderr, cli.stderr
    lines = _lines(cli.stdout)
    assert cli.returncode == 1
    assert lines["cpu-mlp"][0] == "passed"  # eager code runs fine: only compile finds it
    status, detail = lines["cpu-compile"]
    assert status == "failed"
    assert "C++ compiler" in detail, detail


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not importable here")
def test_an_interpreter_of_another_python_is_bad_input(run_cli: CliRunner, tmp_path: Path) -> None:
    """Issue 30 item 7: a 3.11 interpreter tested a python313 variant and passed its checks."""
    other = "3.12" if HOST_PY == "3.13" else "3.13"
    name = f"pytorch-python{other.replace('.', '')}-cpu-avx2"
    catalog = (REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    if other != "3.13":
        catalog = catalog.replace('python: ["3.13"]', f'python: ["3.13", "{other}"]')
    (tmp_path / "catalog.yaml").write_text(catalog, encoding="utf-8")
    (tmp_path / "nix").symlink_to(REPO_ROOT / "nix")
    cli = run_cli("test", "--python", sys.executable, "--branch", "main", name, cwd=tmp_path)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert f"is Python {HOST_PY}." in cli.stderr
    assert f"but {name} is built for Python {other}: name a Python {other} interpreter" in (
        cli.stderr
    )
    assert not list(tmp_path.rglob("*.result.json"))  # nothing recorded: the command was wrong


def test_missing_result_dir_says_build_first(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path
) -> None:
    cli = run_cli(
        "test", "--catalog", str(repo_root / "catalog.yaml"), "--branch", "main", CPU, cwd=tmp_path
    )
    assert cli.returncode == 2
    assert f"result-{CPU}: no such build result; build it first" in cli.stderr
    assert "Traceback" not in cli.stderr


def test_unknown_variant_offers_the_closest(run_cli: CliRunner) -> None:
    cli = run_cli(
        "test", "--python", sys.executable, "--branch", "main", "pytorch-python313-cpu-avx3"
    )
    assert cli.returncode == 2
    assert "closest: pytorch-python313-cpu-avx2" in cli.stderr


def test_not_a_python_interpreter(run_cli: CliRunner, tmp_path: Path) -> None:
    fake = _script(tmp_path / "notpython", "#!/bin/sh\necho hello\n")
    cli = run_cli("test", "--python", str(fake), "--branch", "main", CPU)
    assert cli.returncode == 2
    assert f"{fake} is not a Python interpreter ci-tools can use" in cli.stderr
    text = tmp_path / "text"
    text.write_text("not executable", encoding="utf-8")
    cli = run_cli("test", "--python", str(text), "--branch", "main", CPU)
    assert cli.returncode == 2 and "not an executable file" in cli.stderr


def test_interpreter_without_torch_in_a_result_dir(run_cli: CliRunner, tmp_path: Path) -> None:
    # -S drops site-packages, where torch lives: a Python with no torch on its path.
    _script(
        tmp_path / "result-x" / "bin" / "python3", f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n'
    )
    cli = run_cli("test", "--result", str(tmp_path / "result-x"), "--branch", "main", CPU)
    assert cli.returncode == 2
    assert "has no torch on its path" in cli.stderr and "Traceback" not in cli.stderr


def test_a_crashing_interpreter_is_a_failed_check(
    run_cli: CliRunner, catalog: Catalog, tmp_path: Path, host_catalog: str
) -> None:
    name = _cpu_variant()
    if not _host_runs(catalog, name):
        pytest.skip("this host cannot run the CPU variant's code")
    # Preflight answers as the real Python; the run dies of SIGILL while "importing torch".
    crashing = _script(
        tmp_path / "python3",
        "#!/bin/sh\n"
        'if [ "$2" = run ]; then\n'
        '  echo \'CI-TOOLS-SMOKE {"begin": "import:torch"}\'\n'
        "  kill -ILL $$\n"
        "fi\n"
        f'exec "{sys.executable}" "$@"\n',
    )
    if not HAS_TORCH:
        pytest.skip("preflight needs torch on the real interpreter's path")
    cli = run_cli(
        "test", "--python", str(crashing), "--branch", "main", _host(name),
        "--catalog", host_catalog,
    )  # fmt: skip
    assert cli.returncode == 1
    assert "Traceback" not in cli.stderr
    lines = _lines(cli.stdout)
    assert lines["import-torch"] == (
        "failed",
        "no result for import:torch: the interpreter was killed by SIGILL during import:torch",
    )
    assert lines["torch-version"] == ("skipped", "needs torch, which did not import")


def test_result_record_of_unknown_schema(run_cli: CliRunner, tmp_path: Path) -> None:
    path = results.result_path(tmp_path, CPU)
    path.write_text(json.dumps({"schema": 99, "variant": CPU}), encoding="utf-8")
    cli = run_cli(
        "test", "--python", sys.executable, "--branch", "main", CPU, "--results", str(tmp_path)
    )
    assert cli.returncode == 2
    assert "result schema 99 is not supported" in cli.stderr


# --- the binary's own arch list (cuobjdump) -------------------------------------------------

# What cuobjdump 13.0 listed in PyPI's torch 2.11.0+cu130 on the GPU machine (device run of
# issue 13): a fat library, sm_90a and friends included.
FAT_SASS = [
    "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_103a",
    "sm_120", "sm_120a", "sm_121a",
]  # fmt: skip


def test_sass_exactly_the_variants_sm_passes(catalog: Catalog) -> None:
    check = by_name(evaluate(h100_facts(), expect(catalog, GPU)))["sass"]
    assert check.status is Status.STATIC
    assert check.detail == (
        "libtorch_cuda.so: SASS [sm_90], PTX []; exactly sm_90, as cuobjdump lists"
    )


def test_sass_same_sm_ptx_is_allowed_other_ptx_is_not(catalog: Catalog) -> None:
    same = h100_facts(sass=sass_fact({"libtorch_cuda.so": (["sm_90"], ["sm_90"])}))
    assert by_name(evaluate(same, expect(catalog, GPU)))["sass"].status is Status.STATIC
    other = h100_facts(sass=sass_fact({"libtorch_cuda.so": (["sm_90"], ["sm_120"])}))
    assert by_name(evaluate(other, expect(catalog, GPU)))["sass"].status is Status.FAILED


def test_sass_of_a_fat_library_fails_naming_what_it_holds(catalog: Catalog) -> None:
    facts = h100_facts(
        sass=sass_fact(
            {
                "libtorch_cuda.so": (FAT_SASS, []),
                "libtorch_cuda_linalg.so": (["sm_80", "sm_90"], []),
            }
        )
    )
    check = by_name(evaluate(facts, expect(catalog, GPU)))["sass"]
    assert check.status is Status.FAILED
    assert check.detail == (
        "libtorch_cuda.so: SASS [" + ", ".join(FAT_SASS) + "], PTX []; "
        "libtorch_cuda_linalg.so: SASS [sm_80, sm_90], PTX []; "
        "expected exactly SASS [sm_90] (PTX of sm_90 allowed)"
    )


def test_sass_of_the_arch_specific_variant_alone_is_not_sm90(catalog: Catalog) -> None:
    facts = h100_facts(sass=sass_fact({"libtorch_cuda.so": (["sm_90a"], [])}))
    assert by_name(evaluate(facts, expect(catalog, GPU)))["sass"].status is Status.FAILED


def test_sass_without_cuobjdump_or_libraries(catalog: Catalog) -> None:
    check = by_name(evaluate(h100_facts(sass=None), expect(catalog, GPU)))["sass"]
    assert check.status is Status.SKIPPED and "cuobjdump is not on PATH" in check.detail
    empty = h100_facts(sass={"tool": "cuobjdump", "lib_dir": "/x/torch/lib", "libraries": {}})
    check = by_name(evaluate(empty, expect(catalog, GPU)))["sass"]
    assert (check.status, check.detail) == (
        Status.FAILED,
        "no libtorch_cuda*.so in /x/torch/lib",
    )
    broken = h100_facts(sass={"error": "cuobjdump --list-elf libtorch_cuda.so failed: boom"})
    check = by_name(evaluate(broken, expect(catalog, GPU)))["sass"]
    assert check.status is Status.FAILED and check.detail.endswith("failed: boom")


def test_cpu_variants_have_no_sass_check(catalog: Catalog) -> None:
    assert "sass" not in check_names(expect(catalog, CPU))
    assert "sass" in check_names(expect(catalog, GPU))


def test_parse_cuobjdump_listings() -> None:
    listing = "\n".join(
        [
            "ELF file    1: libtorch_cuda.1.sm_90.cubin",
            "ELF file    2: libtorch_cuda.2.sm_80.cubin",
            "ELF file    3: libtorch_cuda.3.sm_90.cubin",
            "ELF file    4: libtorch_cuda.4.sm_100a.cubin",
            "PTX file    5: libtorch_cuda.5.sm_120.ptx",
            "cuobjdump info    : something else",
        ]
    )
    assert binary.parse_listing(listing) == ["sm_80", "sm_90", "sm_100a", "sm_120"]
    assert binary.parse_listing("") == []


FAKE_CUOBJDUMP = """\
#!/bin/sh
# Listing options of cuobjdump (CUDA Binary Utilities, "Listing and Extracting Embedded
# Binaries (-lelf, -lptx)"): one line per embedded file, its arch in the name. A file with no
# device code makes the real tool say so and fail; so does this one.
case "$2" in
  *libtorch_cuda.so) ;;
  *) echo "cuobjdump info    : File '$2' does not contain device code" >&2; exit 255 ;;
esac
case "$1" in
  --list-elf) printf 'ELF file    1: libtorch_cuda.1.sm_80.cubin\\nELF file    2: libtorch_cuda.2.sm_90.cubin\\n' ;;
  --list-ptx) printf 'PTX file    1: libtorch_cuda.1.sm_90.ptx\\n' ;;
  *) echo "cuobjdump fatal   : Unknown option '$1'" >&2; exit 1 ;;
esac
"""


def test_sass_fact_from_cuobjdump_on_path(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    _script(bindir / "cuobjdump", FAKE_CUOBJDUMP)
    lib_dir = tmp_path / "torch" / "lib"
    lib_dir.mkdir(parents=True)
    facts = {
        "torch.lib_dir": str(lib_dir),
        "torch.libraries": {"libtorch_cpu.so": 10, "libtorch_cuda.so": 20, "libtorch_cuda_x.so": 1},
    }
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    fact = binary.sass_fact(facts, env)
    assert fact == {
        "tool": str(bindir / "cuobjdump"),
        "lib_dir": str(lib_dir),
        "libraries": {
            "libtorch_cuda.so": {"sass": ["sm_80", "sm_90"], "ptx": ["sm_90"]},
            "libtorch_cuda_x.so": {"sass": [], "ptx": []},
        },
    }
    assert binary.sass_fact(facts, {"PATH": str(tmp_path / "empty")}) is None
    home = tmp_path / "cuda"
    _script(home / "bin" / "cuobjdump", FAKE_CUOBJDUMP)
    env = {"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(home)}
    assert binary.find_cuobjdump(env) == str(home / "bin" / "cuobjdump")


def test_sass_fact_reports_a_failing_cuobjdump(tmp_path: Path) -> None:
    _script(
        tmp_path / "bin" / "cuobjdump", "#!/bin/sh\necho 'cuobjdump fatal   : boom' >&2\nexit 1\n"
    )
    facts = {"torch.lib_dir": str(tmp_path), "torch.libraries": {"libtorch_cuda.so": 1}}
    fact = binary.sass_fact(facts, {"PATH": str(tmp_path / "bin")})
    assert fact is not None
    assert fact["error"] == "cuobjdump --list-elf libtorch_cuda.so failed: cuobjdump fatal   : boom"


def test_the_binary_facts_need_the_probes_library_folder(tmp_path: Path, catalog: Catalog) -> None:
    _script(tmp_path / "bin" / "cuobjdump", FAKE_CUOBJDUMP)
    env = {"PATH": str(tmp_path / "bin"), "OBJDUMP": "/usr/bin/objdump"}
    avx2 = expect(catalog, CPU)
    folder_error = {"error": "the probe reported no torch library folder to read"}
    for facts in ({}, {"torch.lib_dir": str(tmp_path)}, {"torch.libraries": {}}):
        assert binary.sass_fact(facts, env) == folder_error
        assert binary.isa_fact(facts, avx2, env) == folder_error
    no_cpu = {"torch.lib_dir": str(tmp_path), "torch.libraries": {"libtorch_cuda.so": 1}}
    assert binary.isa_fact(no_cpu, avx2, env) == {"error": f"no libtorch_cpu.so in {tmp_path}"}
    assert binary.isa_fact(no_cpu, avx2, {"PATH": str(tmp_path / "empty")}) is None


# --- ISA kernels and compile: the pure verdicts ---------------------------------------------


def test_isa_kernel_checks_follow_the_catalogs_cpuinfo(catalog: Catalog) -> None:
    bf16 = expect(catalog, "pytorch-python313-cpu-avx512bf16")
    vnni = expect(catalog, "pytorch-python313-cpu-avx512vnni")
    assert "bf16-matmul" in check_names(bf16) and "int8-linear" not in check_names(bf16)
    assert "int8-linear" in check_names(vnni) and "bf16-matmul" not in check_names(vnni)
    assert not {"bf16-matmul", "int8-linear"} & set(check_names(expect(catalog, CPU)))
    facts = h100_facts(
        **{
            "cpu.capability": "AVX512",
            "work:bf16_matmul": {"ok": False, "detail": "RuntimeError: off by 0.9 (relative)"},
        }
    )
    check = by_name(evaluate(facts, bf16))["bf16-matmul"]
    assert (check.status, check.detail) == (Status.FAILED, "RuntimeError: off by 0.9 (relative)")
    del facts["work:bf16_matmul"]
    crash = "the interpreter was killed by SIGILL during work:bf16_matmul"
    check = by_name(evaluate(facts, bf16, crash))["bf16-matmul"]
    assert check.status is Status.FAILED and check.detail.endswith(crash)


def test_isa_kernels_are_never_run_on_a_host_without_the_flags(catalog: Catalog) -> None:
    bf16 = expect(catalog, "pytorch-python313-cpu-avx512bf16")
    flags = {"avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_vnni"}
    reason = runner.host_guard(bf16, "x86_64-linux", flags)
    assert reason is not None and reason.startswith("this host's CPU lacks avx512_bf16")
    skipped = by_name(skip_all(bf16, reason))
    assert skipped["bf16-matmul"].status is Status.SKIPPED


def test_compile_failure_is_a_failed_check(catalog: Catalog) -> None:
    message = (
        "torch._inductor.exc.InductorError: InvalidCxxCompiler: No working C++ compiler found "
        "in torch._inductor.config.cpp.cxx: (None, 'g++')"
    )
    facts = h100_facts(**{"work:cpu_compile": {"ok": False, "detail": message}})
    check = by_name(evaluate(facts, expect(catalog, GPU)))["cpu-compile"]
    assert (check.status, check.detail) == (Status.FAILED, message)
    facts = h100_facts(
        **{"work:gpu_compile": {"ok": False, "detail": "Cannot find a working triton installation"}}
    )
    assert by_name(evaluate(facts, expect(catalog, GPU)))["gpu-compile"].status is Status.FAILED


def test_import_seconds_is_the_median_of_fresh_interpreters(tmp_path: Path) -> None:
    # Each run answers as the probe does; the third is slow: the median ignores it.
    counter = tmp_path / "n"
    fake = _script(
        tmp_path / "python3",
        "#!/bin/sh\n"
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "{counter}"\n'
        "case $n in 3) t=9.5 ;; *) t=0.$n ;; esac\n"
        'echo "CI-TOOLS-SMOKE {\\"fact\\": \\"import.seconds\\", \\"value\\": $t}"\n'
        "echo 'CI-TOOLS-SMOKE {\"done\": true}'\n",
    )
    assert runner.import_seconds(str(fake), {"PATH": os.environ.get("PATH", "")}, 5) == 0.4
    broken = _script(tmp_path / "broken", "#!/bin/sh\nexit 1\n")
    assert runner.import_seconds(str(broken), {"PATH": os.environ.get("PATH", "")}, 3) is None


def test_sass_is_judged_even_where_the_host_must_not_run_the_build(
    catalog: Catalog, tmp_path: Path
) -> None:
    # cuobjdump reads the files: a GPU build on a host without its CPU flags still gets the
    # binary proof. The torch here is CPU-only: no libtorch_cuda*.so at all.
    if not HAS_TORCH:
        pytest.skip("preflight needs torch on the interpreter's path")
    _script(tmp_path / "bin" / "cuobjdump", FAKE_CUOBJDUMP)
    # binutils that find no symbols: objdump reading all of the real libtorch_cpu.so takes a
    # minute, and the ISA proof on it is tests/build/test_isa.py's.
    for tool in ("nm", "objdump"):
        _script(tmp_path / "bin" / tool, "#!/bin/sh\nexit 0\n")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    smoke = runner.smoke_test(
        expect(catalog, GPU), sys.executable, host_platform="x86_64-linux", host_flags={"avx2"},
        env=env,
    )  # fmt: skip
    checks = by_name(smoke.checks)
    assert checks["isa-code"].status is Status.FAILED
    assert "no symbols" in checks["isa-code"].detail, checks["isa-code"].detail
    lib_dir = Path(torch_origin()).parent / "lib"
    cuda_libs = sorted(p.name for p in lib_dir.glob("libtorch_cuda*.so"))
    assert checks["sass"].status is Status.FAILED
    if not cuda_libs:  # the CPU wheel
        assert checks["sass"].detail == f"no libtorch_cuda*.so in {lib_dir}"
    else:  # PyPI's CUDA wheel, listed by the double above: sm_80 and sm_90 is not sm_90 alone
        assert "libtorch_cuda.so: SASS [sm_80, sm_90], PTX [sm_90]" in checks["sass"].detail
    assert {c.status for n, c in checks.items() if n not in ("sass", "isa-code")} == {
        Status.SKIPPED
    }
    assert smoke.figures is not None and smoke.figures.import_seconds is None
    assert [lib.name for lib in smoke.figures.libraries] == ["libtorch_cpu.so", *cuda_libs]
    assert smoke.figures.package_bytes is not None
    assert smoke.figures.package_bytes > smoke.figures.libraries[0].bytes
