"""What the machine in front of us is: its platform and the CPU flags /proc/cpuinfo lists.

`ci-tools test` reads these before it runs any code of a build (a build for a CPU feature the
host lacks dies of SIGILL), and `ci-tools detect` recommends an ISA from them.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

from ci_tools.base import bounded
from ci_tools.base.errors import InputError

CPUINFO = Path("/proc/cpuinfo")
# /proc/cpuinfo holds a few kilobytes per core; a flags line is under 2 kB today. Anything far
# larger is not cpuinfo, and splitting it would cost memory in proportion.
MAX_CPUINFO_BYTES = 8 << 20
MAX_FLAGS_LINE = 16 << 10

# x86 kernels list the features under `flags`, aarch64 kernels under `Features`.
_FLAG_KEYS = frozenset({"flags", "features"})

_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_SYSTEMS = {"linux": "linux", "darwin": "darwin"}


def parse_cpuinfo(text: str) -> frozenset[str]:
    """The CPU flags every processor has: x86 `flags` lines, aarch64 `Features` lines.

    Intersected across processors, because a process may run on any core and the cores of
    one machine can differ (big.LITTLE ARM): a flag only some cores have would SIGILL on
    the others.
    """
    common: frozenset[str] | None = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in _FLAG_KEYS and len(value) <= MAX_FLAGS_LINE:
            flags = frozenset(value.split())
            common = flags if common is None else common & flags
    return common if common is not None else frozenset()


def read_cpuinfo(path: Path = CPUINFO) -> str:
    """The text of /proc/cpuinfo, bounded (`bounded.read_text`): OSError when unreadable."""
    return bounded.read_text(path, MAX_CPUINFO_BYTES, errors="replace")


def read_cpu_flags(path: Path = CPUINFO) -> frozenset[str]:
    """The host's CPU flags; empty where the file does not exist (macOS has none)."""
    try:
        return parse_cpuinfo(read_cpuinfo(path))
    except FileNotFoundError:
        return frozenset()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the CPU's flags: {exc}") from None


def platform_name(machine: str, system: str) -> str | None:
    """('x86_64', 'linux') -> 'x86_64-linux', as the catalog spells platforms; None if unknown."""
    arch = _MACHINES.get(machine.lower())
    kernel = _SYSTEMS.get(system.lower())
    if arch is None or kernel is None:
        return None
    return f"{arch}-{kernel}"


def host_platform() -> str | None:
    return platform_name(platform.machine(), sys.platform)
