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
from ci_tools.catalog import grammar
from ci_tools.catalog.model import Kind, Platform
from ci_tools.catalog.yamlsrc import (
    Node,
    Problems,
    check_keys,
    did_you_mean,
    kind_of,
    load_yaml,
    scalar_str,
    string_list,
    version_str,
)

DEFAULT_LABELS: Mapping[Platform, tuple[str, ...]] = {
    Platform.X86_64_LINUX: ("self-hosted", "Linux", "X64"),
    Platform.AARCH64_LINUX: ("self-hosted", "Linux", "ARM64"),
    Platform.AARCH64_DARWIN: ("self-hosted", "macOS", "ARM64"),
}

# A CUDA build of torch takes hours; CPU-only and MPS builds are quicker.
DEFAULT_TIMEOUTS: Mapping[Kind, int] = {Kind.GPU: 360, Kind.CPU: 180, Kind.DARWIN: 180}

# GitHub cancels a self-hosted job after 5 days whatever the workflow says.
MAX_TIMEOUT = 5 * 24 * 60


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
    """Read and validate `runners.yaml`; every problem names file:line. `known_sms` (the
    catalog's GPUs) catches a test runner whose SM no variant can ever have."""
    root = load_yaml(path, display_name)
    problems = Problems()
    inventory = _inventory(root, problems, set(known_sms) if known_sms is not None else None)
    problems.raise_if_any()
    assert inventory is not None
    return inventory


def _inventory(root: Node, problems: Problems, known_sms: set[str] | None) -> Inventory | None:
    if root.value is None:
        problems.add(root.file, 1, "the runner inventory is empty; it needs builders")
        return None
    if not check_keys(
        root,
        problems,
        what="the runner inventory",
        required=("builders",),
        # preflight: read by .github/scripts/preflight.py on the runners, not here.
        optional=("test_runners", "preflight"),
    ):
        return None
    if "preflight" in root.value:
        _preflight(root.child("preflight"), problems)
    if "builders" not in root.value:
        return None
    builders_node = root.child("builders")
    builders: dict[Platform, Pool] = {}
    if builders_node.is_mapping() and builders_node.value:
        for name, node in builders_node.items():
            platform = _platform(name, node, problems, f'builders: platform "{name}"')
            pool = _pool(name, node, problems) if platform is not None else None
            if platform is not None and pool is not None:
                builders[platform] = pool
    else:
        problems.add(
            builders_node.file,
            builders_node.line,
            f"builders must map platforms to pools, got {kind_of(builders_node.value)}",
        )
    runners: list[GpuRunner] = []
    if "test_runners" in root.value:
        list_node = root.child("test_runners")
        if list_node.is_list():
            for index, node in list_node.elements():
                runner = _test_runner(index, node, problems, known_sms)
                if runner is not None:
                    runners.append(runner)
        elif list_node.value is not None:
            problems.add(
                list_node.file,
                list_node.line,
                f"test_runners must be a list, got {kind_of(list_node.value)}",
            )
    return Inventory(
        builders=builders,
        test_runners=tuple(runners),
        source=root.file,
        builders_line=root.key_line("builders"),
    )


def _platform(text: str, node: Node, problems: Problems, what: str) -> Platform | None:
    known = [p.value for p in Platform]
    if text in known:
        return Platform(text)
    problems.add(
        node.file,
        node.line,
        f"{what} is unknown{did_you_mean(text, known)}; known: {', '.join(known)}",
    )
    return None


def _pool(name: str, node: Node, problems: Problems) -> Pool | None:
    what = f"builders.{name}"
    if not check_keys(
        node, problems, what=what, required=("labels",), optional=("timeout_minutes", "cpu_flags")
    ):
        return None
    labels = _labels(node, problems, what)
    timeouts = _timeouts(node, problems, what) or DEFAULT_TIMEOUTS
    flags = _flags(node, problems, what) if "cpu_flags" in node.value else None
    if labels is None:
        return None
    return Pool(platform=Platform(name), labels=labels, timeouts=timeouts, cpu_flags=flags)


def _test_runner(
    index: int, node: Node, problems: Problems, known_sms: set[str] | None
) -> GpuRunner | None:
    what = f"test_runners[{index}]"
    if not check_keys(
        node,
        problems,
        what=what,
        required=("labels", "platform", "sm", "cpu_flags"),
        optional=("timeout_minutes",),
    ):
        return None
    labels = _labels(node, problems, what)
    platform = None
    if "platform" in node.value:
        text = scalar_str(node.child("platform"), problems, f"{what}.platform")
        if text is not None:
            platform = _platform(
                text, node.child("platform"), problems, f'{what}.platform "{text}"'
            )
    sm = None
    if "sm" in node.value:
        sm = scalar_str(node.child("sm"), problems, f"{what}.sm")
        line = node.value_line("sm")
        if sm is not None and grammar.SM.problem(sm) is not None:
            problems.add(node.file, line, f'{what}.sm "{sm}" must look like "sm90"')
            sm = None
        elif sm is not None and known_sms is not None and sm not in known_sms:
            problems.add(
                node.file,
                line,
                f'{what}.sm "{sm}" is no GPU of the catalog{did_you_mean(sm, known_sms)}',
            )
            sm = None
    flags = _flags(node, problems, what) if "cpu_flags" in node.value else None
    timeouts = _timeouts(node, problems, what)
    if labels is None or platform is None or sm is None or flags is None:
        return None
    return GpuRunner(
        labels=labels,
        platform=platform,
        sm=sm,
        cpu_flags=flags,
        timeouts=timeouts,
    )


def _labels(node: Node, problems: Problems, what: str) -> tuple[str, ...] | None:
    if "labels" not in node.value:
        return None
    before = len(problems.items)
    entries = string_list(
        node.child("labels"), problems, f"{what}.labels", grammar.RUNNER_LABEL, non_empty=True
    )
    return None if len(problems.items) > before else tuple(label for label, _ in entries)


def _flags(node: Node, problems: Problems, what: str) -> frozenset[str] | None:
    before = len(problems.items)
    entries = string_list(
        node.child("cpu_flags"), problems, f"{what}.cpu_flags", grammar.CPUINFO_FLAG
    )
    return None if len(problems.items) > before else frozenset(flag for flag, _ in entries)


def _timeouts(node: Node, problems: Problems, what: str) -> Mapping[Kind, int] | None:
    """`timeout_minutes: 360` for every kind, or `{gpu: 360, cpu: 180, darwin: 180}`."""
    if "timeout_minutes" not in node.value:
        return None
    tnode = node.child("timeout_minutes")
    if tnode.is_mapping():
        kinds = tuple(k.value for k in Kind)
        if not check_keys(tnode, problems, what=f"{what}.timeout_minutes", optional=kinds):
            return None
        out = dict(DEFAULT_TIMEOUTS)
        for key, child in tnode.items():
            minutes = _minutes(child.value, node.file, tnode.value_line(key), problems, what)
            if key in kinds and minutes is not None:
                out[Kind(key)] = minutes
        return out
    minutes = _minutes(tnode.value, node.file, tnode.line, problems, what)
    return None if minutes is None else dict.fromkeys(Kind, minutes)


def _minutes(value: object, file: str, line: int, problems: Problems, what: str) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TIMEOUT:
        problems.add(
            file,
            line,
            f"{what}.timeout_minutes must be a whole number of minutes from 1 to {MAX_TIMEOUT} "
            f"(GitHub stops self-hosted jobs after 5 days), got {kind_of(value)}",
        )
        return None
    return value


# Bounds of `preflight.min_free_gb`: a build needs ~20 GB; more than a petabyte is a typo.
MAX_FREE_GB = 1_000_000


def _preflight(node: Node, problems: Problems) -> None:
    """The runners' preflight settings (.github/scripts/preflight.py reads them on the runner):
    checked here too, so a typo fails the plan with file:line instead of every build job."""
    if not check_keys(node, problems, what="preflight", optional=("flox", "min_free_gb")):
        return
    if "flox" in node.value:
        version_str(node.child("flox"), problems, "preflight.flox")
    if "min_free_gb" in node.value:
        value = node.value["min_free_gb"]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_FREE_GB:
            problems.add(
                node.file,
                node.value_line("min_free_gb"),
                f"preflight.min_free_gb must be a whole number of GiB from 0 to {MAX_FREE_GB}",
            )
