"""The runner inventory (`runners.yaml`): where each variant builds, and where its checks run.

Builder pools, one per platform, carry the self-hosted labels, a timeout and optionally the
`/proc/cpuinfo` flags of their CPUs; they build. Test runners advertise a GPU (SM) and their
CPU flags; with a binary cache (`cache`) they only test. `place` decides, for one variant,
its build leg and its test leg. With a cache the build leg is always its platform's pool,
and the cache carries the build to the test leg. Without one nothing can carry it to
another runner's store, so a variant routed to a test runner builds there too (the build
leg runs on the test runner's labels, with its timeout), and no test leg is ever routed away
from its build. The test leg:

* `gpu`    a test runner with the variant's SM whose CPU runs the variant's ISA: every check
           runs (darwin: the Mac pool, whose MPS GPU every Apple-silicon Mac has);
* `cpu`    a runner whose CPU runs the ISA, the pool first (GPU hosts stay free), else a test
           runner: the CPU checks run, a GPU variant's SASS is proven statically;
* `static` no runner of the fleet runs the ISA (running it would die of SIGILL): the pool
           proves it from its files (SASS, the ISA's instructions), running nothing;
* `none`   the ISA is not in the ISA table: nobody can tell what would prove it.

The file is optional: without it every platform gets the default pool, no test runners and
no cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ci_tools.base.errors import InputError, SourceError
from ci_tools.catalog import tables
from ci_tools.catalog.layout import RUNNERS as RUNNERS_FILE
from ci_tools.catalog.model import Kind, Platform
from ci_tools.catalog.shape import Record
from ci_tools.catalog.yamlsrc import Problems, did_you_mean, load_yaml

if TYPE_CHECKING:
    from ci_tools.plan.binarycache import BinaryCache

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
    STATIC = "static"
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
    """The builders of one platform (runners.yaml `builders`): their labels and timeouts."""

    platform: Platform
    labels: tuple[str, ...]
    timeouts: Mapping[Kind, int]
    cpu_flags: frozenset[str] | None = None  # None: not declared, so nothing can be promised


@dataclass(frozen=True, kw_only=True)
class GpuRunner:
    """A self-hosted runner with one GPU (runners.yaml `test_runners`)."""

    labels: tuple[str, ...]
    platform: Platform
    sm: str
    cpu_flags: frozenset[str]
    timeouts: Mapping[Kind, int] | None = None  # None: the platform pool's


@dataclass(frozen=True, kw_only=True)
class Inventory:
    """The runner fleet: runners.yaml, or the defaults where there is none."""

    builders: Mapping[Platform, Pool]
    test_runners: tuple[GpuRunner, ...] = ()
    cache: BinaryCache | None = None
    source: str | None = None  # the file it came from; None for the defaults
    builders_line: int = 0

    def gpu_runners(self, platform: Platform, sm: str) -> tuple[GpuRunner, ...]:
        return tuple(r for r in self.test_runners if r.platform is platform and r.sm == sm)


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where a stack builds and where, and how far, its test runs."""

    runs_on: tuple[str, ...]  # the build leg: the platform's pool; without a cache the test leg's
    timeout_minutes: int  # the build leg's
    test: CheckScope
    test_reason: str
    test_runs_on: tuple[str, ...]  # the test leg
    test_timeout_minutes: int  # the test leg's: the test runner's own, else the pool's


def default_inventory() -> Inventory:
    return Inventory(
        builders={
            platform: Pool(platform=platform, labels=labels, timeouts=DEFAULT_TIMEOUTS)
            for platform, labels in DEFAULT_LABELS.items()
        }
    )


def place(inventory: Inventory, variant: Placeable) -> Placement | None:
    """Where `variant` builds and where, and how deeply, it is tested; None if no pool serves
    its platform (the caller reports every such variant at once)."""
    pool = inventory.builders.get(variant.platform)
    if pool is None:
        return None

    def placed(
        scope: CheckScope,
        labels: tuple[str, ...],
        reason: str = "",
        runner: GpuRunner | None = None,
    ) -> Placement:
        timeouts = runner.timeouts if runner is not None and runner.timeouts else pool.timeouts
        build_on, build_minutes = pool.labels, pool.timeouts[variant.kind]
        if runner is not None and inventory.cache is None:
            # No cache carries the build to the test runner's store: the test runner builds it.
            build_on, build_minutes = runner.labels, timeouts[variant.kind]
        return Placement(
            runs_on=build_on,
            timeout_minutes=build_minutes,
            test=scope,
            test_reason=reason,
            test_runs_on=labels,
            test_timeout_minutes=timeouts[variant.kind],
        )

    if variant.kind is Kind.DARWIN:
        # Every Apple-silicon Mac has the MPS GPU the darwin-mps variant targets.
        return placed(CheckScope.GPU, pool.labels)
    if variant.cpuinfo is None:
        why = f"ISA {variant.isa} is not in the ISA table: nobody can tell which CPUs run it"
        return placed(CheckScope.NONE, pool.labels, why)
    need = variant.cpuinfo
    gpu_note = ""
    if variant.sm is not None:
        candidates = inventory.gpu_runners(variant.platform, variant.sm)
        for runner in candidates:
            if runner.cpu_flags.issuperset(need):
                return placed(CheckScope.GPU, runner.labels, runner=runner)
        gpu_note = _gpu_note(variant, candidates)
    if pool.cpu_flags is not None and pool.cpu_flags.issuperset(need):
        return placed(CheckScope.CPU, pool.labels, gpu_note)
    capable = _cpu_runner(inventory, variant.platform, need)
    if capable is not None:
        return placed(CheckScope.CPU, capable.labels, gpu_note, capable)
    why = _no_cpu(inventory, pool, variant)
    return placed(CheckScope.STATIC, pool.labels, "; ".join(p for p in (gpu_note, why) if p))


def _gpu_note(variant: Placeable, candidates: Sequence[GpuRunner]) -> str:
    if not candidates:
        return f"no {variant.platform} test runner has an {variant.sm} GPU"
    need = variant.cpuinfo or ()
    nearest = min(candidates, key=lambda r: len(set(need) - r.cpu_flags))
    return f"the {variant.sm} test runners' CPUs lack {_missing(need, nearest.cpu_flags)}"


def _cpu_runner(inventory: Inventory, platform: Platform, need: Sequence[str]) -> GpuRunner | None:
    """A test runner whose CPU runs `need` (where the pool's does not: GPU hosts stay free)."""
    for runner in inventory.test_runners:
        if runner.platform is platform and runner.cpu_flags.issuperset(need):
            return runner
    return None


def _no_cpu(inventory: Inventory, pool: Pool, variant: Placeable) -> str:
    need = variant.cpuinfo or ()
    if pool.cpu_flags is None:
        lacking = f"builder pool {pool.platform} declares no cpu_flags"
    else:
        lacking = f"builder pool {pool.platform} lacks {_missing(need, pool.cpu_flags)}"
    others = [r for r in inventory.test_runners if r.platform is pool.platform]
    if others:
        lacking += ", and so does every test runner"
    # Why the leg is static, not a verdict: next to "unproven" a reason ending "proven
    # statically" read as both at once (issue 30).
    return f"no runner's CPU runs {variant.isa} ({lacking}): read, not run"


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
    from ci_tools.base.problem import Problem  # here: only bad input creates one

    return SourceError([Problem(inventory.source, inventory.builders_line, m) for m in messages])


# --- loading ---------------------------------------------------------------------------------


def find_inventory(
    path: Path | None,
    cwd: Path,
    known_sms: Iterable[str] | None = None,
    known_flags: Iterable[str] | None = None,
) -> Inventory:
    """`path` (`--runners`), else runners.yaml in `cwd` if there is one, else the defaults."""
    if path is None:
        path = cwd / RUNNERS_FILE
        if not path.is_file():
            return default_inventory()
    try:
        shown = str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        shown = str(path)
    return load_inventory(path, shown, known_sms=known_sms, known_flags=known_flags)


def load_inventory(
    path: Path,
    display_name: str | None = None,
    known_sms: Iterable[str] | None = None,
    known_flags: Iterable[str] | None = None,
) -> Inventory:
    """Read and validate `runners.yaml` (its shape is `tables.RUNNERS`); every problem names
    file:line. `known_sms` (the catalog's GPUs) catches a test runner whose SM no variant can
    ever have, `known_flags` (the flags the catalog's ISAs need) a CPU flag routing never
    reads (a typo: `avx512_bf61` would keep every bf16 variant from the runner)."""
    root = load_yaml(path, display_name)
    problems = Problems()
    record = tables.RUNNERS.check_document(root, problems)
    if record is not None:
        _check_sms(
            record.get("test_runners"), set(known_sms) if known_sms is not None else None, problems
        )
        if known_flags is not None:
            _check_flags(record, frozenset(known_flags), problems)
        _check_exclusive(record, problems)
    problems.raise_if_any()
    assert record is not None
    cache = record["cache"]
    return Inventory(
        builders={Platform(name): _pool(name, pool) for name, pool in record["builders"].items()},
        test_runners=tuple(_test_runner(runner) for runner, _ in record["test_runners"]),
        cache=_cache(cache) if cache is not None else None,
        source=root.file,
        builders_line=root.key_line("builders"),
    )


def _check_flags(record: Record, known: frozenset[str], problems: Problems) -> None:
    # A part found malformed is absent (None) here: its problem is already reported.
    pools = record.get("builders") or {}
    lists = [(f"builders.{name}", pool) for name, pool in pools.items()]
    lists += [
        (f"test_runners[{i}]", runner)
        for i, (runner, _) in enumerate(record.get("test_runners") or ())
    ]
    for where, owner in lists:
        if owner is None:
            continue
        for flag, line in owner.get("cpu_flags") or ():
            if flag not in known:
                problems.add(
                    owner.node.file,
                    line,
                    f'{where}.cpu_flags: "{flag}" is no flag the catalog\'s ISAs need'
                    f"{did_you_mean(flag, set(known))}; known: {', '.join(sorted(known))}",
                )


def _check_exclusive(record: Record, problems: Problems) -> None:
    """A job runs on any runner that has all its labels: a test runner whose labels another
    runner also has cannot be served. Its GPU tests may run on that runner, and without a
    cache its build may run on one host and its test on the other, whose store lacks it."""
    pools = record.get("builders") or {}
    others = [(f"builders.{name}", pool) for name, pool in pools.items() if pool is not None]
    runners = [
        (f"test_runners[{i}]", runner)
        for i, (runner, _) in enumerate(record.get("test_runners") or ())
        if runner is not None
    ]
    for index, (where, runner) in enumerate(runners):
        labels = _label_set(runner)
        if not labels:
            continue
        rivals = others + [r for j, r in enumerate(runners) if j != index]
        for other, owner in rivals:
            if labels <= _label_set(owner):
                problems.add(
                    runner.node.file,
                    runner.value_line("labels"),
                    f"{where}.labels: {other} has every one of them, so a job routed to this "
                    f"test runner may run there: give it a label of its own (gpu-{runner['sm']})",
                )
                break


def _label_set(owner: Record) -> frozenset[str]:
    return frozenset(label for label, _ in owner.get("labels") or ())


def _cache(cache: Record) -> BinaryCache:
    from ci_tools.plan.binarycache import BinaryCache  # here: most fleets share no cache

    return BinaryCache(
        url=cache["url"],
        public_keys=tuple(key for key, _ in cache["public_keys"]),
        signing_key_secret=cache["signing_key_secret"],
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
