"""The runner inventory (`runners.yaml`): where each variant builds and what its test can check.

Builder pools, one per platform, carry the self-hosted labels, a timeout and optionally the
`/proc/cpuinfo` flags of their CPUs. Test runners advertise a GPU (SM) and their CPU flags.
`place` decides, for one variant, the runner and the depth of its test step:

* `gpu`  a test runner with the variant's SM whose CPU runs the variant's ISA;
* `cpu`  the platform's builder pool, whose CPU runs the ISA (no matching GPU there);
* `none` the pool's CPU lacks a flag the ISA needs (running the build would die of SIGILL),
         or nobody can tell (the pool declares no flags, the ISA is unknown).

The file is optional: without it every platform gets the default pool and no test runners.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from ci_tools.base.errors import InputError, Problem, SourceError
from ci_tools.catalog import tables
from ci_tools.catalog.model import Kind, Platform
from ci_tools.catalog.shape import Record
from ci_tools.catalog.yamlsrc import Problems, did_you_mean, load_yaml

DEFAULT_LABELS: Mapping[Platform, tuple[str, ...]] = {
    Platform.X86_64_LINUX: ("self-hosted", "Linux", "X64"),
    Platform.AARCH64_LINUX: ("self-hosted", "Linux", "ARM64"),
    Platform.AARCH64_DARWIN: ("self-hosted", "macOS", "ARM64"),
}

# A CUDA build of torch takes hours; CPU-only and MPS builds are quicker (declared with the
# file's shape, which the README's key reference states).
DEFAULT_TIMEOUTS: Mapping[Kind, int] = {
    Kind(kind): minutes for kind, minutes in tables.DEFAULT_MINUTES.items()
}


class CheckScope(StrEnum):
    GPU = "gpu"
    CPU = "cpu"
    NONE = "none"


class Placeable(Protocol):
    """What placement needs to know about a variant (matrix.Target satisfies it)."""

    @property
    def platform(self) -> Platform: ...
    @property
    def kind(self) -> Kind: ...
    @property
    def sm(self) -> str | None: ...
    @property
    def isa(self) -> str | None: ...
    @property
    def cpuinfo(self) -> tuple[str, ...] | None: ...


@dataclass(frozen=True, kw_only=True)
class Pool:
    platform: Platform
    labels: tuple[str, ...]
    timeouts: Mapping[Kind, int]
    cpu_flags: frozenset[str] | None = None  # None: not declared, so nothing can be promised


@dataclass(frozen=True, kw_only=True)
class GpuRunner:
    labels: tuple[str, ...]
    platform: Platform
    sm: str
    cpu_flags: frozenset[str]
    timeouts: Mapping[Kind, int] | None = None  # None: the platform pool's


@dataclass(frozen=True, kw_only=True)
class Inventory:
    builders: Mapping[Platform, Pool]
    test_runners: tuple[GpuRunner, ...] = ()
    source: str | None = None  # the file it came from; None for the defaults
    builders_line: int = 0

    def gpu_runners(self, platform: Platform, sm: str) -> tuple[GpuRunner, ...]:
        return tuple(r for r in self.test_runners if r.platform is platform and r.sm == sm)


@dataclass(frozen=True, kw_only=True)
class Placement:
    runs_on: tuple[str, ...]
    timeout_minutes: int
    test: CheckScope
    test_reason: str


def default_inventory() -> Inventory:
    return Inventory(
        builders={
            platform: Pool(platform=platform, labels=labels, timeouts=DEFAULT_TIMEOUTS)
            for platform, labels in DEFAULT_LABELS.items()
        }
    )


def place(inventory: Inventory, variant: Placeable) -> Placement | None:
    """Where `variant` builds and how deeply it can be tested; None if no pool serves its
    platform (the caller reports every such variant at once)."""
    pool = inventory.builders.get(variant.platform)
    if pool is None:
        return None
    timeout = pool.timeouts[variant.kind]
    if variant.kind is Kind.DARWIN:
        # Every Apple-silicon Mac has the MPS GPU the darwin-mps variant targets.
        return Placement(
            runs_on=pool.labels, timeout_minutes=timeout, test=CheckScope.GPU, test_reason=""
        )
    if variant.cpuinfo is None:
        return Placement(
            runs_on=pool.labels,
            timeout_minutes=timeout,
            test=CheckScope.NONE,
            test_reason=f"ISA {variant.isa} is not in the ISA table: "
            "nobody can tell which CPUs run it",
        )
    need = variant.cpuinfo
    gpu_note = ""
    if variant.sm is not None:
        candidates = inventory.gpu_runners(variant.platform, variant.sm)
        for runner in candidates:
            if runner.cpu_flags.issuperset(need):
                runner_timeout = (runner.timeouts or pool.timeouts)[variant.kind]
                return Placement(
                    runs_on=runner.labels,
                    timeout_minutes=runner_timeout,
                    test=CheckScope.GPU,
                    test_reason="",
                )
        if candidates:
            nearest = min(candidates, key=lambda r: len(set(need) - r.cpu_flags))
            lacking = _missing(need, nearest.cpu_flags)
            gpu_note = f"the {variant.sm} test runners' CPUs lack {lacking}"
        else:
            gpu_note = f"no {variant.platform} test runner has an {variant.sm} GPU"
    if pool.cpu_flags is None:
        why = (
            f"builder pool {pool.platform} declares no cpu_flags: "
            f"nobody can tell whether its CPUs run {variant.isa}"
        )
        scope = CheckScope.NONE
    elif not pool.cpu_flags.issuperset(need):
        why = (
            f"builder pool {pool.platform} lacks {_missing(need, pool.cpu_flags)}: "
            "running it would die of SIGILL"
        )
        scope = CheckScope.NONE
    else:
        why = "CUDA checks skipped" if gpu_note else ""
        scope = CheckScope.CPU
    reason = "; ".join(part for part in (gpu_note, why) if part)
    return Placement(runs_on=pool.labels, timeout_minutes=timeout, test=scope, test_reason=reason)


def _missing(need: Iterable[str], have: frozenset[str]) -> str:
    return " ".join(flag for flag in need if flag not in have)


def unserved(inventory: Inventory, missing: Mapping[Platform, list[str]]) -> InputError:
    """The error for variants whose platform has no builder pool, one line per platform."""
    known = ", ".join(inventory.builders) or "none"
    messages = []
    for platform, names in missing.items():
        shown = ", ".join(names[:10])
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        messages.append(
            f"no builder pool for platform {platform} (pools: {known}), which {shown}{more} "
            f"need: add builders.{platform} to the runner inventory, or leave the platform "
            "out with --platform"
        )
    if inventory.source is None:
        return InputError("\n".join(messages))
    return SourceError([Problem(inventory.source, inventory.builders_line, m) for m in messages])


# --- loading ---------------------------------------------------------------------------------


def load_inventory(
    path: Path, display_name: str | None = None, known_sms: Iterable[str] | None = None
) -> Inventory:
    """Read and validate `runners.yaml` (its shape is `tables.RUNNERS`); every problem names
    file:line. `known_sms` (the catalog's GPUs) catches a test runner whose SM no variant can
    ever have."""
    root = load_yaml(path, display_name)
    problems = Problems()
    record = tables.RUNNERS.check_document(root, problems)
    if record is not None:
        _check_sms(
            record.get("test_runners"), set(known_sms) if known_sms is not None else None, problems
        )
    problems.raise_if_any()
    assert record is not None
    return Inventory(
        builders={Platform(name): _pool(name, pool) for name, pool in record["builders"].items()},
        test_runners=tuple(_test_runner(runner) for runner, _ in record["test_runners"]),
        source=root.file,
        builders_line=root.key_line("builders"),
    )


def _check_sms(
    runners: tuple[tuple[Record, int], ...] | None, known: set[str] | None, problems: Problems
) -> None:
    for index, (runner, _) in enumerate(runners or ()):
        sm = runner["sm"]
        if sm is not None and known is not None and sm not in known:
            problems.add(
                runner.node.file,
                runner.value_line("sm"),
                f'test_runners[{index}].sm "{sm}" is no GPU of the catalog{did_you_mean(sm, known)}',
            )


def _timeouts(value: Record | int | None) -> Mapping[Kind, int] | None:
    """`timeout_minutes: 360` for every kind, or `{gpu: 360, cpu: 180, darwin: 180}`."""
    if value is None:
        return None
    if isinstance(value, Record):
        return {Kind(kind): minutes for kind, minutes in value.items()}
    return dict.fromkeys(Kind, value)


def _pool(name: str, pool: Record) -> Pool:
    flags = pool["cpu_flags"]
    return Pool(
        platform=Platform(name),
        labels=tuple(label for label, _ in pool["labels"]),
        timeouts=_timeouts(pool["timeout_minutes"]) or DEFAULT_TIMEOUTS,
        cpu_flags=frozenset(flag for flag, _ in flags) if flags is not None else None,
    )


def _test_runner(runner: Record) -> GpuRunner:
    return GpuRunner(
        labels=tuple(label for label, _ in runner["labels"]),
        platform=Platform(runner["platform"]),
        sm=runner["sm"],
        cpu_flags=frozenset(flag for flag, _ in runner["cpu_flags"]),
        timeouts=_timeouts(runner["timeout_minutes"]),
    )
