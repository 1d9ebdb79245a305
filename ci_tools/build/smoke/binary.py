"""What code the libraries really hold: `cuobjdump` lists the SASS (cubin) and PTX embedded
in each libtorch_cuda*.so; objdump reads the CPU instructions of libtorch_cpu.so (`isa`).
`torch.cuda.get_arch_list()` is the list the build reports about itself; a build that lies to
it (or a closure that picked up another torch) still holds other kernels, and only the binary
shows that.

Nothing of the build runs here: the tools read the files, so this is safe on any host.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_tools.base import proc
from ci_tools.build.smoke import isa
from ci_tools.build.smoke.expect import Expectations

CUOBJDUMP_TIMEOUT = 600.0

# `cuobjdump --list-elf` prints `ELF file    1: libtorch_cuda.1.sm_90.cubin`, `--list-ptx`
# prints `PTX file    1: libtorch_cuda.1.sm_90.ptx` (CUDA binary utilities manual, cuobjdump
# options --list-elf/-lelf and --list-ptx/-lptx). The arch may carry a suffix: sm_90a, sm_100f.
_ENTRY = re.compile(r"\.(sm_[0-9]{1,4}[a-z]?)\.(?:cubin|ptx)\s*$", re.ASCII)


def find_cuobjdump(env: Mapping[str, str]) -> str | None:
    """cuobjdump from PATH, else from the CUDA toolkit that CUDA_HOME / CUDA_PATH names."""
    found = proc.which("cuobjdump", env)
    if found is not None:
        return found
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = env.get(variable)
        if root:
            candidate = Path(root) / "bin" / "cuobjdump"
            if candidate.is_file():
                return str(candidate)
    return None


def _arch_key(arch: str) -> tuple[int, str]:
    number = re.search(r"[0-9]+", arch, re.ASCII)
    return (int(number.group()) if number else 0, arch)


def parse_listing(text: str) -> list[str]:
    """The architectures of a `cuobjdump --list-elf` or `--list-ptx` listing, sorted, once each."""
    archs = {m.group(1) for line in text.splitlines() if (m := _ENTRY.search(line.strip()))}
    return sorted(archs, key=_arch_key)


def _listing(cuobjdump: str, option: str, library: Path, env: Mapping[str, str]) -> list[str]:
    result = proc.run([cuobjdump, option, str(library)], env=env, timeout=CUOBJDUMP_TIMEOUT)
    if result.timed_out:
        raise RuntimeError(f"cuobjdump {option} {library.name} timed out")
    archs = parse_listing(result.stdout)
    # A library with no device code makes cuobjdump say so and exit non-zero: no archs.
    if not result.ok and not archs and "does not contain device code" not in result.stderr:
        said = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"cuobjdump {option} {library.name} failed: {said[0]}")
    return archs


def _probed_libraries(facts: Mapping[str, Any]) -> tuple[str, frozenset[str]] | dict[str, Any]:
    """The torch library folder the probe found and the names of the libraries in it; else
    the error a binary fact reports when the probe found none."""
    lib_dir = facts.get("torch.lib_dir")
    names = facts.get("torch.libraries")
    if not isinstance(lib_dir, str) or not isinstance(names, dict):
        return {"error": "the probe reported no torch library folder to read"}
    return lib_dir, frozenset(names)


def sass_fact(facts: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The `sass` fact the evaluation judges: None without cuobjdump; else the SASS and PTX
    architectures of each libtorch_cuda*.so, or the error that stopped the listing."""
    cuobjdump = find_cuobjdump(env)
    if cuobjdump is None:
        return None
    probed = _probed_libraries(facts)
    if isinstance(probed, dict):
        return probed
    lib_dir, names = probed
    libraries: dict[str, dict[str, list[str]]] = {}
    try:
        for name in sorted(n for n in names if n.startswith("libtorch_cuda")):
            library = Path(lib_dir) / name
            libraries[name] = {
                "sass": _listing(cuobjdump, "--list-elf", library, env),
                "ptx": _listing(cuobjdump, "--list-ptx", library, env),
            }
    except RuntimeError as exc:
        return {"error": str(exc), "lib_dir": lib_dir}
    return {"tool": cuobjdump, "lib_dir": lib_dir, "libraries": libraries}


def binutils(env: Mapping[str, str]) -> tuple[str, str] | None:
    """objdump and nm: $OBJDUMP and $NM where set (a cross binutils, as build systems name
    them), else from PATH; None without objdump."""
    objdump = env.get("OBJDUMP") or proc.which("objdump", env)
    if not objdump:
        return None
    nm = env.get("NM") or (
        objdump.removesuffix("objdump") + "nm" if objdump.endswith("objdump") else "nm"
    )
    return objdump, nm


def isa_fact(
    facts: Mapping[str, Any], expect: Expectations, env: Mapping[str, str]
) -> dict[str, Any] | None:
    """The `isa` fact: None without objdump; else the verdict of `isa.prove` on
    libtorch_cpu.so, or the error that stopped it."""
    tools = binutils(env)
    if tools is None:
        return None
    probed = _probed_libraries(facts)
    if isinstance(probed, dict):
        return probed
    lib_dir, names = probed
    if "libtorch_cpu.so" not in names or expect.isa is None:
        return {"error": f"no libtorch_cpu.so in {lib_dir}"}
    target = isa.Target(isa=expect.isa, platform=expect.platform, cpuinfo=expect.cpuinfo)
    verdict = isa.prove(
        Path(lib_dir) / "libtorch_cpu.so", target, objdump=tools[0], nm=tools[1], env=env
    )
    return {"ok": verdict.ok, "cannot_tell": verdict.cannot_tell, "detail": verdict.detail}
