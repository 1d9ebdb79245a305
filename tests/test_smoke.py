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

from ci_tools import hostcpu, proc, results, variants
from ci_tools.errors import InputError
from ci_tools.model import Catalog
from ci_tools.results import Check, Status
from ci_tools.smoke import closure, runner
from ci_tools.smoke.evaluate import check_names, evaluate, skip_all, version_matches
from ci_tools.smoke.expect import CPU_CAPABILITY_ORDER, Expectations, expectations_for

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
        "cuda.available": True,
        "cuda.devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}],
        "cuda.device": {"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"},
        "work:gpu_mlp": ok("forward+backward on cuda:0, loss 0.0578"),
        "work:gpu_matmul": ok("1000x1000 matmul on cuda:0 matches the CPU (max error 3e-05)"),
    }
    facts.update(changes)
    return facts


def by_name(checks: tuple[Check, ...]) -> dict[str, Check]:
    return {c.name: c for c in checks}


# --- the pure evaluation ------------------------------------------------------------------


def test_matching_gpu_build_passes_every_check(catalog: Catalog) -> None:
    checks = evaluate(h100_facts(), expect(catalog, GPU))
    assert [c.name for c in checks] == [
        "import-torch", "torch-version", "cuda-version", "arch-list", "cudnn",
        "cpu-capability", "cpu-mlp", "gpu-mlp", "gpu-matmul",
    ]  # fmt: skip
    assert all(c.status is Status.PASSED for c in checks), checks
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
    assert all(c.status is Status.PASSED for c in checks), checks
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
        "mps.available": True,
        "work:mps_matmul": ok("1000x1000 matmul on mps matches the CPU"),
    }
    checks = by_name(evaluate(facts, mps))
    assert "cpu-capability" not in checks and "cudnn" not in checks
    assert all(c.status is Status.PASSED for c in checks.values()), checks
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
    facts = {"import:torch": {"ok": False, "detail": "OSError: libcudart.so.12: cannot open"}}
    checks = evaluate(facts, expect(catalog, GPU))
    assert checks[0].status is Status.FAILED and "libcudart" in checks[0].detail
    assert {c.status for c in checks[1:]} == {Status.SKIPPED}


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
    }
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
    smoke = runner.smoke_test(
        expect(catalog, GPU),
        sys.executable,
        host_platform="x86_64-linux",
        host_flags={"avx2"},
        env=os.environ,
    )
    assert smoke.interpreter is not None
    assert {c.status for c in smoke.checks} == {Status.SKIPPED}
    assert "lacks avx512f" in smoke.checks[0].detail


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


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not importable here")
def test_real_cpu_torch_against_a_cpu_variant(
    run_cli: CliRunner, catalog: Catalog, tmp_path: Path
) -> None:
    name = _cpu_variant()
    record = tmp_path / "record.json"
    cli = run_cli(
        "test", "--python", sys.executable, "--branch", "main", name, "--result-json", str(record)
    )
    assert "Traceback" not in cli.stderr, cli.stderr
    lines = _lines(cli.stdout)
    if not _host_runs(catalog, name):
        assert cli.returncode == 0
        assert {status for status, _ in lines.values()} == {"skipped"}
        return
    version = importlib.metadata.version("torch")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert lines["torch-version"] == ("failed", f"torch.__version__ is {version}, expected 2.8.0")
    assert lines["import-torch"][0] == "passed"
    assert lines["cuda-version"] == ("passed", "torch.version.cuda is None, as a CPU build must")
    assert lines["arch-list"] == (
        "passed",
        "compiled for no CUDA architecture, as a CPU build must",
    )
    assert lines["cpu-capability"][0] == "passed"
    assert lines["cpu-mlp"][0] == "passed" and "forward+backward on cpu" in lines["cpu-mlp"][1]
    assert f"failed: {name}: 5 passed, 1 failed, 0 skipped" in cli.stdout
    data = json.loads(record.read_text(encoding="utf-8"))
    assert data["schema"] == 1 and data["variant"] == name and data["build"] is None
    assert data["test"]["status"] == "failed"
    assert {c["name"]: c["status"] for c in data["test"]["checks"]}["torch-version"] == "failed"


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not importable here")
def test_real_cpu_torch_against_a_gpu_variant(run_cli: CliRunner, catalog: Catalog) -> None:
    name = "pytorch-python313-cuda12_8-sm90-avx2"
    if not _host_runs(catalog, name):
        pytest.skip("this host cannot run an x86_64 avx2 build")
    cli = run_cli("test", "--python", sys.executable, "--branch", "main", name)
    lines = _lines(cli.stdout)
    assert cli.returncode == 1
    assert lines["cuda-version"] == (
        "failed",
        "torch.version.cuda is None (a CPU-only torch), expected 12.8",
    )
    assert lines["arch-list"][0] == "failed"
    assert lines["cudnn"][0] == "failed"
    if lines["gpu-mlp"][0] == "skipped":
        assert "GPU" in lines["gpu-mlp"][1]


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
    run_cli: CliRunner, catalog: Catalog, tmp_path: Path
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
    cli = run_cli("test", "--python", str(crashing), "--branch", "main", name)
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
