"""Read this machine's facts for `detect`: GPUs, driver, CPU flags, machine. The only I/O of
detect.

Each reader degrades to "not there" with a note rather than failing: a machine without
nvidia-smi simply has no GPU to recommend for.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import digits, proc
from ci_tools.base.errors import InputError, printable
from ci_tools.host import hostcpu
from ci_tools.host.facts import HostGpu, is_driver

CPUINFO = Path("/proc/cpuinfo")
QUERY_FIELDS = ("name", "compute_cap", "driver_version")
NVIDIA_SMI_QUERY = (
    "nvidia-smi",
    "--query-gpu=" + ",".join(QUERY_FIELDS),
    "--format=csv,noheader",
)
# One line per GPU of under a hundred bytes; a machine has at most a few dozen GPUs.
MAX_NVIDIA_SMI_BYTES = 64 << 10

# A compute capability as nvidia-smi prints it, "9.0" or "12.1": major of at most 3 digits,
# minor of at most 2, ASCII.
CAPABILITY_WIDTHS = (3, 2)
# What nvidia-smi prints (exit 6 on recent drivers) when the driver is there but no GPU is.
_NO_DEVICES = "No devices were found"


@dataclass(frozen=True, kw_only=True)
class GpuReading:
    gpus: tuple[HostGpu, ...]
    note: str  # how we know, for the reason line when there is no GPU
    warning: str | None = None
    driver: str | None = None  # the NVIDIA driver nvidia-smi names


@dataclass(frozen=True, kw_only=True)
class CpuReading:
    flags: frozenset[str]
    warning: str | None = None


def _fields(text: str) -> list[tuple[str, str, str]]:
    """`NAME, CAP, DRIVER` per line. nvidia-smi's csv quotes no value, so a name holding a
    comma is printed as it is ("an extra column and a value containing a comma are
    indistinguishable", utkuozdemir/nvidia_gpu_exporter#477): a line is read from its right
    end, where the query's other fields stand, which hold no comma. A line with fewer fields
    than the query asks for is no answer to it (nvidia-smi fills every field, with [N/A] where
    it has no value) and is refused rather than guessed at."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or _NO_DEVICES in line:
            continue
        fields = line.rsplit(",", len(QUERY_FIELDS) - 1)
        if len(fields) < len(QUERY_FIELDS):
            raise InputError(
                f'nvidia-smi answered "{printable(digits.shown(line.strip(), 80))}", which is '
                f"not the {len(QUERY_FIELDS)} fields --query-gpu={','.join(QUERY_FIELDS)} asks "
                "for; pass --gpu-cc X.Y to name the GPU's capability instead"
            )
        name, cap, driver = (field.strip() for field in fields)
        rows.append((name, cap, driver))
    return rows


def parse_nvidia_smi(text: str) -> tuple[HostGpu, ...]:
    """`NAME, CAP, DRIVER` per line (the name may hold commas); a line without all three is
    refused (InputError).

    A capability without digits (`[N/A]`, `[Not Supported]`) is unknown; one written with
    digits must be X.Y in ASCII digits, or the answer is refused (InputError): Arabic-Indic or
    fullwidth digits, or thousands of them, are no capability nvidia-smi prints.
    """
    return tuple(
        HostGpu(name=name or None, capability=_capability(name, cap))
        for name, cap, _ in _fields(text)
    )


def parse_driver(text: str) -> str | None:
    """The driver version nvidia-smi names (one driver serves every GPU of a machine)."""
    for _, _, driver in _fields(text):
        if is_driver(driver):
            return driver
    return None


def _capability(name: str, cap: str) -> str | None:
    if not any(char.isdigit() for char in cap):
        return None
    if digits.dotted(cap, CAPABILITY_WIDTHS) is not None:
        return cap
    raise InputError(
        f'nvidia-smi reports the compute capability "{printable(digits.shown(cap))}" for GPU '
        f'"{printable(digits.shown(name.strip(), 80))}", which is not X.Y in ASCII digits '
        "(9.0, 12.1); pass --gpu-cc X.Y to name the GPU's capability instead"
    )


def read_gpus(timeout: float = 60) -> GpuReading:
    if proc.which("nvidia-smi") is None:
        return GpuReading(gpus=(), note="no NVIDIA GPU (nvidia-smi not found)")
    result = proc.run(list(NVIDIA_SMI_QUERY), timeout=timeout, max_output=MAX_NVIDIA_SMI_BYTES)
    if result.truncated:
        return GpuReading(
            gpus=(),
            note="no NVIDIA GPU (nvidia-smi's answer was not readable)",
            warning=f"nvidia-smi printed over {MAX_NVIDIA_SMI_BYTES} bytes, which is no list "
            "of GPUs; treating this machine as having no GPU; pass --gpu-cc X.Y to name its GPU",
        )
    if _NO_DEVICES in result.stdout + result.stderr:
        return GpuReading(gpus=(), note="no NVIDIA GPU (nvidia-smi lists none)")
    if not result.ok:
        said = (result.stderr.strip() or result.stdout.strip()).splitlines()
        detail = "timed out" if result.timed_out else f"exit {result.returncode}"
        if said:
            detail += f": {said[0]}"
        return GpuReading(
            gpus=(),
            note="no NVIDIA GPU (nvidia-smi failed)",
            warning=f"nvidia-smi failed ({detail}); treating this machine as having no GPU; "
            "pass --gpu-cc X.Y to name its GPU",
        )
    gpus = parse_nvidia_smi(result.stdout)
    return GpuReading(
        gpus=gpus,
        note="no NVIDIA GPU (nvidia-smi lists none)",
        driver=parse_driver(result.stdout) if gpus else None,
    )


def read_cpu_flags(path: Path = CPUINFO) -> CpuReading:
    try:
        text = hostcpu.read_cpuinfo(path)
    except OSError as exc:
        return CpuReading(
            flags=frozenset(),
            warning=f"cannot read {path} ({exc.strerror or exc}); pass --cpu-flags to name the "
            "CPU's flags",
        )
    flags = hostcpu.parse_cpuinfo(text)
    if not flags:
        return CpuReading(
            flags=flags,
            warning=f"{path} has no flags/Features line; pass --cpu-flags to name the CPU's flags",
        )
    return CpuReading(flags=flags)


def normalize_machine(system: str, machine: str) -> str:
    """uname's system and machine -> a facts.MACHINES key, or a description of the host."""
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine.lower())
    if system == "Linux":
        return arch
    if system == "Darwin" and arch == "aarch64":
        return "arm64-darwin"
    return f"{arch}-{system.lower()}"


def read_machine() -> str:
    return normalize_machine(platform.system(), platform.machine())
