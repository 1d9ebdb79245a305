"""Which variant fits a machine, in three pure steps: host facts -> candidates -> choice.

`facts` says what the machine is (read by hostinfo, or stated by a person); `candidates` lists
every variant of the catalog that could serve it, each with why it fits or not; `choice`
recommends one per GPU compute capability (or one for the CPU-only or Apple machine), with the
reasons and the other branches that have one. `detect` is the one entry point: everything that
answers "which build for this machine?" asks it, so every answer is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ci_tools.base.errors import InputError
from ci_tools.catalog.model import Catalog, Platform
from ci_tools.host import candidates, choice
from ci_tools.host.candidates import GpuGroup, newest_python
from ci_tools.host.choice import Alternative, Recommendation
from ci_tools.host.facts import MACHINES, Host, HostGpu

# What callers of detect name: the inputs, the answer, and the records inside it.
__all__ = [
    "GENERAL",
    "MACHINES",
    "Alternative",
    "Detection",
    "GpuGroup",
    "Host",
    "HostGpu",
    "Recommendation",
    "detect",
    "workloads",
]

GENERAL = "general"


@dataclass(frozen=True, kw_only=True)
class Detection:
    branch: str
    package: str
    python: str
    workload: str
    machine: str
    platform: Platform | None
    recommendations: tuple[Recommendation, ...]
    warnings: tuple[str, ...]
    driver: str | None = None

    @property
    def ok(self) -> bool:
        """Every GPU (or the machine) has a variant that fits, on this branch or another."""
        return all(r.package is not None or r.alternatives for r in self.recommendations)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def workloads(catalog: Catalog) -> tuple[str, ...]:
    """`general` and every workload an ISA of the catalog is meant for."""
    named = sorted({i.workload for i in catalog.isas.values() if i.workload is not None})
    return (GENERAL, *named)


def detect(
    catalog: Catalog,
    host: Host,
    *,
    branch: str,
    package: str = "pytorch",
    workload: str = GENERAL,
    python: str | None = None,
    built: candidates.Built | None = None,
) -> Detection:
    """Recommend one variant of `package` on `branch` per GPU capability (or one CPU/MPS), at
    `python` (default: the branch's newest). `built` is candidates.Built.of(catalog), for a
    caller that asks many questions of one catalog."""
    the_branch = catalog.branch(branch)
    _check_question(catalog, package, workload)
    if python is not None and python not in the_branch.python:
        raise InputError(
            f'--python: branch {branch} builds no Python "{python}"; it builds '
            f"{', '.join(the_branch.python)}"
        )
    found = candidates.gather(
        catalog, host, package=package, workload=workload, python=python, built=built
    )
    return Detection(
        branch=branch,
        package=package,
        python=python or newest_python(the_branch.python),
        workload=workload,
        machine=host.machine,
        platform=host.platform,
        recommendations=choice.choose(catalog, found, branch=branch),
        warnings=(*host.warnings, *_mixed_gpus(found.gpus)),
        driver=host.driver,
    )


def _check_question(catalog: Catalog, package: str, workload: str) -> None:
    if package not in catalog.packages:
        raise InputError(
            f'--package: unknown package "{package}"; {catalog.display_name} has '
            f"{', '.join(catalog.packages)}"
        )
    if workload not in workloads(catalog):
        raise InputError(
            f'--workload: unknown workload "{workload}"; use one of {", ".join(workloads(catalog))}'
        )


def _mixed_gpus(groups: Sequence[GpuGroup]) -> tuple[str, ...]:
    if len(groups) <= 1:
        return ()
    caps = ", ".join(
        f"{g.capability or '?'}" + (f" ({' + '.join(g.names)})" if g.names else "") for g in groups
    )
    return (
        f"GPUs of {len(groups)} compute capabilities ({caps}): one recommendation each; "
        "a variant targets one SM, so use each on its own GPU (CUDA_VISIBLE_DEVICES)",
    )
