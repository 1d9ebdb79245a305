"""What a machine is, as detect needs it: its kind, its CPU's flags, its GPUs, its driver.

`hostinfo` reads them from the machine in front of us; a person states them instead with
`--machine`, `--cpu-flags`, `--gpu-cc` and `--driver` (or their environment variables), and the
selector page from its query string. The grammar of each stated fact lives here, once: the
command parses with it and the page is handed the same patterns. Nothing here reads the host
or the catalog.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ci_tools.base.errors import InputError, printable
from ci_tools.catalog.model import Platform

# The machines detect knows, and how a host's uname maps onto them (hostinfo.normalize_machine).
MACHINES: dict[str, Platform] = {
    "x86_64": Platform.X86_64_LINUX,
    "aarch64": Platform.AARCH64_LINUX,
    "arm64-darwin": Platform.AARCH64_DARWIN,
}
# Other names a person or a script may give: `uname -m` on a Mac prints arm64 (Linux on ARM
# prints aarch64), Windows and Debian say amd64, Nix says x86_64-linux.
MACHINE_ALIASES: dict[str, str] = {
    "arm64": "arm64-darwin",
    "aarch64-darwin": "arm64-darwin",
    "amd64": "x86_64",
    "x86_64-linux": "x86_64",
    "aarch64-linux": "aarch64",
}

# ASCII only: `\d` would take fullwidth digits, which nothing downstream can read as a number.
CAPABILITY_PATTERN = r"[0-9]{1,3}\.[0-9]{1,2}"
FLAG_PATTERN = r"[a-z0-9_.]{1,32}"
DRIVER_PATTERN = r"[0-9]{2,4}(\.[0-9]{1,4}){0,2}"
_CAPABILITY = re.compile(CAPABILITY_PATTERN, re.ASCII)
_FLAG = re.compile(FLAG_PATTERN, re.ASCII)
_DRIVER = re.compile(DRIVER_PATTERN, re.ASCII)
NO_GPU = "none"
# The lead of the reason for a machine stated to have no GPU (`--gpu-cc none`, the page).
STATED_NO_GPU = "no NVIDIA GPU (as stated)"


@dataclass(frozen=True, kw_only=True)
class HostGpu:
    name: str | None  # as nvidia-smi names it; None when given by --gpu-cc
    capability: str | None  # "9.0"; None when nvidia-smi reports [N/A]


@dataclass(frozen=True, kw_only=True)
class Host:
    """What detect knows about a machine, read from it or given as overrides."""

    machine: str  # a MACHINES key, or what an unsupported host is ("ppc64le", "x86_64-darwin")
    cpu_flags: frozenset[str] = frozenset()
    gpus: tuple[HostGpu, ...] = ()
    driver: str | None = None  # the NVIDIA driver ("580.65.06"); None where not known
    no_gpu_note: str = "no NVIDIA GPU"  # how we know there is none, for the reason line
    warnings: tuple[str, ...] = ()

    @property
    def platform(self) -> Platform | None:
        """The catalog's platform for this machine; None where the catalog builds nothing."""
        return MACHINES.get(self.machine)

    @property
    def driver_major(self) -> int | None:
        """The driver's branch (580 of 580.65.06), which the catalog's `min_driver` names."""
        return int(self.driver.split(".")[0]) if self.driver is not None else None

    @classmethod
    def described(
        cls,
        *,
        machine: str,
        capabilities: Iterable[str] = (),
        cpu_flags: Iterable[str] = (),
        driver: str | None = None,
    ) -> Host:
        """A machine as a person states it: its kind, its GPUs' compute capabilities (one per
        GPU, unnamed), its CPU's /proc/cpuinfo flags, its NVIDIA driver."""
        return cls(
            machine=machine,
            cpu_flags=frozenset(cpu_flags),
            gpus=tuple(HostGpu(name=None, capability=c) for c in capabilities),
            driver=driver,
            no_gpu_note=STATED_NO_GPU,
        )


def parse_machine(text: str, source: str) -> str:
    """A stated machine -> a MACHINES key; `source` names where it came from in the error."""
    value = text.strip()
    machine = MACHINE_ALIASES.get(value, value)
    if machine not in MACHINES:
        known = ", ".join([*MACHINES, *MACHINE_ALIASES])
        raise InputError(f'{source}: unknown machine "{printable(value)}"; use one of {known}')
    return machine


def parse_capabilities(text: str, source: str) -> tuple[str, ...]:
    """`9.0`, `9.0,8.6` (one per GPU) or `none` -> the capabilities; () for none."""
    items = [item.strip() for item in text.split(",")]
    if items == [NO_GPU]:
        return ()
    for item in items:
        if not _CAPABILITY.fullmatch(item):
            raise InputError(
                f'{source}: "{printable(item)}" is not a compute capability; use X.Y as '
                "nvidia-smi prints it (e.g. 9.0, 12.1), comma-separated for several GPUs, or "
                "`none` alone"
            )
    return tuple(items)


def parse_flags(text: str, source: str) -> frozenset[str]:
    """/proc/cpuinfo flags, comma or space separated."""
    flags = text.replace(",", " ").split()
    bad = [f for f in flags if not _FLAG.fullmatch(f)]
    if bad or not flags:
        shown = f'"{printable(bad[0])}" is not a cpuinfo flag' if bad else "no flags given"
        raise InputError(
            f"{source}: {shown}; give lowercase /proc/cpuinfo flags, comma or space "
            "separated (e.g. avx,avx2,fma,f16c)"
        )
    return frozenset(flags)


def parse_driver(text: str, source: str) -> str:
    """An NVIDIA driver version as nvidia-smi prints it (580.65.06)."""
    value = text.strip()
    if not _DRIVER.fullmatch(value):
        raise InputError(
            f'{source}: "{printable(value)}" is not an NVIDIA driver version; use the '
            "version nvidia-smi prints (e.g. 580.65.06 or 570)"
        )
    return value


def is_driver(text: str) -> bool:
    return _DRIVER.fullmatch(text) is not None


def is_capability(text: str) -> bool:
    return _CAPABILITY.fullmatch(text) is not None
