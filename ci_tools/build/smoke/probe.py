"""The smoke probe: run by the variant's own interpreter, it reports what that build is.

Standalone on purpose: the standard library and torch only, no ci_tools import, because it
runs inside an interpreter that has the build on its path and nothing else. It judges
nothing; it reports facts, one JSON object per line behind a marker, and the host compares
them with the catalog's expectations (ci_tools.build.smoke.evaluate).

Before each step that runs the build's code it announces the step, so when the interpreter
dies (a signal, an abort inside a CUDA library) the host knows which step killed it, and the
facts reported before it still count.

    python3 probe.py preflight        interpreter facts, torch's library sizes and the size of
                                      its package folder, without importing torch
    python3 probe.py run CONFIG_JSON  CONFIG_JSON: {"imports": [...], "gpu_capability": "9.0"
                                      | null, "nms": bool, "mps": bool, "compile": bool,
                                      "isa_kernels": ["bf16_matmul" | "int8_linear", ...]}
    python3 probe.py import-time      the wall time of `import torch` in this fresh interpreter
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

MARKER = "CI-TOOLS-SMOKE "


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(MARKER + json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


def fact(key: str, value: object) -> None:
    emit({"fact": key, "value": value})


def begin(step: str) -> None:
    emit({"begin": step})


def error_text(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return " ".join(line.strip() for line in lines)[:500]


def step(key: str, action: Callable[[], str]) -> None:
    """Run one piece of work; report {"ok", "detail"} under `key` whatever happens."""
    begin(key)
    try:
        detail = action()
    except Exception as exc:
        fact(key, {"ok": False, "detail": error_text(exc)})
    else:
        fact(key, {"ok": True, "detail": str(detail)})


def preflight() -> None:
    fact("python", "{}.{}.{}".format(*sys.version_info[:3]))
    fact("executable", sys.executable)
    spec = importlib.util.find_spec("torch")
    origin = None if spec is None else spec.origin
    fact("torch.origin", origin)
    if origin:
        lib_dir = Path(origin).parent / "lib"
        fact("torch.lib_dir", str(lib_dir))
        fact("torch.libraries", libraries(lib_dir))
        fact("torch.package_bytes", tree_bytes(Path(origin).parent))


def tree_bytes(folder: Path) -> int:
    """The bytes of every regular file under `folder` (site-packages/torch), links not
    followed: what the package takes on disk."""
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            continue
    return total


def libraries(lib_dir: Path) -> dict[str, int]:
    """Sizes of the libraries that hold torch's kernels (libtorch_cpu.so, libtorch_cuda*.so),
    read from the files alone: nothing of the build runs before the host guard."""
    try:
        paths = sorted(lib_dir.iterdir())
    except OSError:
        return {}
    sizes = {}
    for path in paths:
        name = path.name
        if name == "libtorch_cpu.so" or (name.startswith("libtorch_cuda") and name.endswith(".so")):
            try:
                sizes[name] = path.stat().st_size
            except OSError:
                continue
    return sizes


def import_module(name: str) -> Any:
    begin("import:" + name)
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        fact("import:" + name, {"ok": False, "detail": error_text(exc)})
        return None
    fact("import:" + name, {"ok": True, "detail": getattr(module, "__file__", "") or ""})
    return module


def arch_list(torch: Any) -> list[str]:
    # What the library was compiled for, read without a GPU: older torch.cuda.get_arch_list()
    # returns [] whenever no device is visible, which would hide a fat binary on a CPU runner.
    get_flags = getattr(torch._C, "_cuda_getArchFlags", None)
    if get_flags is None:
        return []
    flags = get_flags()
    return flags.split() if flags else []


def mlp(torch: Any, device: str) -> str:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    ).to(device)
    inputs = torch.randn(32, 64, device=device)
    loss = model(inputs).square().mean()
    loss.backward()
    grad = model[0].weight.grad
    if grad is None or not bool(torch.isfinite(grad).all()):
        raise RuntimeError("backward produced no finite gradient")
    return f"forward+backward on {device}, loss {float(loss.detach()):.4f}"


def matmul(torch: Any, device: str) -> str:
    torch.manual_seed(0)
    a = torch.randn(1000, 1000, dtype=torch.float32)
    b = torch.randn(1000, 1000, dtype=torch.float32)
    expected = a @ b
    # TF32 would make the GPU product differ from the CPU one by design, not by a fault.
    torch.backends.cuda.matmul.allow_tf32 = False
    got = (a.to(device) @ b.to(device)).cpu()
    error = float((got - expected).abs().max())
    if not torch.allclose(got, expected, rtol=1e-3, atol=1e-2):
        raise RuntimeError(
            f"1000x1000 matmul on {device} differs from the CPU: max error {error:g}"
        )
    return f"1000x1000 matmul on {device} matches the CPU (max error {error:.2g})"


def compiled(torch: Any, device: str) -> str:
    """A small function through torch.compile (inductor) against eager: inductor generates and
    compiles C++ (CPU) or Triton (GPU) code at run time, so a build whose closure lost its
    compiler, or that has no Triton, imports and runs eager code fine and fails only here."""
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False

    def function(x: Any, y: Any) -> Any:
        return torch.nn.functional.gelu(x @ y) + torch.sin(x).sum(dim=1, keepdim=True)

    x = torch.randn(64, 64, device=device)
    y = torch.randn(64, 64, device=device)
    expected = function(x, y)
    got = torch.compile(function, backend="inductor", fullgraph=True)(x, y)
    error = float((got - expected).abs().max())
    if not torch.allclose(got, expected, rtol=1e-4, atol=1e-4):
        raise RuntimeError(f"torch.compile on {device} differs from eager: max error {error:g}")
    return f"torch.compile (inductor) on {device} matches eager (max error {error:.2g})"


def relative_error(torch: Any, got: Any, expected: Any) -> float:
    return float((got.float() - expected).norm() / expected.norm())


# bf16 keeps 8 bits of mantissa: rounding the inputs alone gives ~3e-3 relative error on a
# 512-long dot product; a wrong kernel gives O(1).
BF16_TOLERANCE = 2e-2
# int8 with a per-tensor scale: ~2e-2 on random data; a wrong kernel gives O(1).
INT8_TOLERANCE = 6e-2


def bf16_matmul(torch: Any) -> str:
    torch.manual_seed(0)
    a = torch.randn(512, 512)
    b = torch.randn(512, 512)
    error = relative_error(torch, a.bfloat16() @ b.bfloat16(), a @ b)
    mkldnn = bool(torch.backends.mkldnn.is_available())
    if error > BF16_TOLERANCE:
        raise RuntimeError(
            f"512x512 bf16 matmul on cpu is off from fp32 by {error:.3g} (relative), "
            f"more than {BF16_TOLERANCE:g}"
        )
    return (
        f"512x512 bf16 matmul on cpu within {error:.2g} of fp32 (tolerance {BF16_TOLERANCE:g}; "
        f"oneDNN {'available' if mkldnn else 'not available'})"
    )


def int8_linear(torch: Any) -> str:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256)).eval()
    quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    kind = type(quantized[0])
    if "quantized" not in kind.__module__:
        raise RuntimeError(f"quantize_dynamic left {kind.__module__}.{kind.__name__} in place")
    inputs = torch.randn(64, 256)
    with torch.no_grad():
        error = relative_error(torch, quantized(inputs), model(inputs))
    engine = torch.backends.quantized.engine
    if error > INT8_TOLERANCE:
        raise RuntimeError(
            f"int8 dynamic Linear (engine {engine}) is off from fp32 by {error:.3g} (relative), "
            f"more than {INT8_TOLERANCE:g}"
        )
    return (
        f"int8 dynamically quantized Linear 256x256 (engine {engine}) within {error:.2g} of "
        f"fp32 (tolerance {INT8_TOLERANCE:g})"
    )


ISA_KERNELS: dict[str, Callable[[Any], str]] = {
    "bf16_matmul": bf16_matmul,
    "int8_linear": int8_linear,
}


def nms(torch: Any, torchvision: Any, device: str) -> str:
    boxes = torch.tensor(
        [[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [50.0, 50.0, 60.0, 60.0]], device=device
    )
    scores = torch.tensor([0.9, 0.8, 0.7], device=device)
    keep = torchvision.ops.nms(boxes, scores, 0.5).cpu().tolist()
    if keep != [0, 2]:
        raise RuntimeError(f"torchvision.ops.nms kept {keep}, expected [0, 2]")
    return f"torchvision.ops.nms on {device} kept [0, 2]"


def cuda_devices(torch: Any) -> list[dict[str, Any]]:
    begin("cuda.devices")
    try:
        available = bool(torch.cuda.is_available())
        fact("cuda.available", available)
        count = torch.cuda.device_count() if available else 0
        devices = []
        for index in range(count):
            major, minor = torch.cuda.get_device_capability(index)
            devices.append(
                {
                    "index": index,
                    "name": torch.cuda.get_device_name(index),
                    "capability": f"{major}.{minor}",
                }
            )
    except Exception as exc:
        fact("cuda.error", error_text(exc))
        devices = []
    fact("cuda.devices", devices)
    return devices


def run(config: dict[str, Any]) -> None:
    preflight()
    torch = import_module("torch")
    if torch is None:
        return
    fact("torch.version", str(torch.__version__))
    fact("torch.version.cuda", torch.version.cuda)
    begin("torch.arch_list")
    fact("torch.arch_list", arch_list(torch))
    fact("torch.cudnn", bool(torch.backends.cudnn.is_available()))
    begin("cpu.capability")
    fact("cpu.capability", torch.backends.cpu.get_cpu_capability())
    step("work:cpu_mlp", lambda: mlp(torch, "cpu"))
    if config.get("compile"):
        step("work:cpu_compile", lambda: compiled(torch, "cpu"))
    for kernel in config.get("isa_kernels", []):
        step("work:" + kernel, partial(ISA_KERNELS[kernel], torch))

    extras: dict[str, Any] = {}
    for name in config.get("imports", []):
        module = import_module(name)
        if module is not None:
            extras[name] = module
            fact(name + ".version", str(getattr(module, "__version__", "")))

    wanted = config.get("gpu_capability")
    if wanted is not None:
        chosen = [d for d in cuda_devices(torch) if d["capability"] == wanted]
        if chosen:
            device = f"cuda:{chosen[0]['index']}"
            fact("cuda.device", chosen[0])
            step("work:gpu_mlp", lambda: mlp(torch, device))
            step("work:gpu_matmul", lambda: matmul(torch, device))
            if config.get("compile"):
                step("work:gpu_compile", lambda: compiled(torch, device))
            if config.get("nms") and "torchvision" in extras:
                step("work:gpu_nms", lambda: nms(torch, extras["torchvision"], device))

    if config.get("mps"):
        mps = getattr(torch.backends, "mps", None)
        available = bool(mps is not None and mps.is_available())
        fact("mps.available", available)
        if available:
            step("work:mps_matmul", lambda: matmul(torch, "mps"))

    emit({"done": True})


def import_time() -> None:
    begin("import.seconds")
    started = time.perf_counter()
    import torch  # noqa: F401

    fact("import.seconds", time.perf_counter() - started)


def main(argv: list[str]) -> int:
    if argv[:1] == ["preflight"]:
        preflight()
        emit({"done": True})
        return 0
    if argv[:1] == ["import-time"]:
        import_time()
        emit({"done": True})
        return 0
    if len(argv) == 2 and argv[0] == "run":
        run(json.loads(argv[1]))
        return 0
    sys.stderr.write(
        "usage: probe.py preflight | probe.py run CONFIG_JSON | probe.py import-time\n"
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
