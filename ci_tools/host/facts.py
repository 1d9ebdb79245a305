"""What a machine is, as detect needs it: its kind, its CPU's flags, its GPUs. Plain facts.

`hostinfo` reads them from the machine in front of us; a person states them instead with
`--machine`, `--cpu-flags` and `--gpu-cc`, and anything else that asks about a machine it is
told of builds them with `Host.described`. Nothing here reads the host or the catalog.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ci_tools.catalog.model import Platform

# The --machine values, and how a host's uname maps onto them (see hostinfo.normalize_machine).
MACHINES: dict[str, Platform] = {
    "x86_64": Platform.X86_64_LINUX,
    "aarch64": Platform.AARCH64_LINUX,
    "arm64-darwin": Platform.AARCH64_DARWIN,
}


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
    no_gpu_note: str = "no NVIDIA GPU"  # how we know there is none, for the reason line
    warnings: tuple[str, ...] = ()

    @property
    def platform(self) -> Platform | None:
        """The catalog's platform for this machine; None where the catalog builds nothing."""
        return MACHINES.get(self.machine)

    @classmethod
    def described(
        cls, *, machine: str, capabilities: Iterable[str] = (), cpu_flags: Iterable[str] = ()
    ) -> Host:
        """A machine as a person states it: its kind, its GPUs' compute capabilities (one per
        GPU, unnamed), its CPU's /proc/cpuinfo flags."""
        return cls(
            machine=machine,
            cpu_flags=frozenset(cpu_flags),
            gpus=tuple(HostGpu(name=None, capability=c) for c in capabilities),
        )
