"""How long one push takes to turn green on the fleet, in the old and the new workflow shape
(issue 28, item 8): a simulation of GitHub's scheduling of one run's jobs.

    python benchmarks/bench_fleet.py [--branch main] [--runners runners.yaml]
        [--hosts 1,4] [--gpu-hosts 1] [--records DIR] [--cache]

The stacks, their order and their routes are `ci-tools matrix`'s own (the real planning code
on this checkout's catalog and runners.yaml): each stack's build leg runs on `runs_on`, its
test leg on `test_runs_on`. The fleet: each builder pool of runners.yaml has N hosts (--hosts,
one figure per N), each test runner --gpu-hosts hosts; a host runs one job at a time. (With
--gpu-hosts above 1 and no cache, a test leg may land on another host than its build, whose
store lacks the build: the real workflow would fail it, the simulation does not model that.)
Durations: a stack's build leg takes the sum of its variants' `build.seconds` where --records
holds a record of each (result records of `ci-tools build`), else the stated defaults below;
a test leg takes TEST_S per variant (records hold no test duration); a mark-green job, on
GitHub's hosted runners, GREEN_S. Time 0 is when the plan job ends.

Shapes (`fleet_sim`): OLD, today's main: the matrix split into shards as `ci-tools matrix
--github-output` splits it (matrix-0 .. matrix-3); in a shard every build leg, then every
test leg once all build legs ended, then one mark-green per shard. NEW: per stack build ->
test -> mark-green, the test queued when its own build ends, the green written when its own
test ends. GitHub's scheduling is modelled FIFO by queue time (fleet_sim's docstring).

For each it prints push-to-green, the first GPU result, the GPU hosts' idle share and the
REST writes (commit statuses; check runs in the new shape), each against its bound (fleet_sim.bounds). Goal: the new shape's
push-to-green within 1.10x of its bound on the shipped inventory with 1 and with 4 hosts per
pool. It prints figures; it exits 2 only on bad input, never because of a figure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

if not __package__:  # run as a script: the repository root holds benchmarks/ and ci_tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import fleet_sim
from benchmarks.fleet_sim import HOUR, MINUTE, Bounds, Figures, Host, Stack
from ci_tools.base.errors import CiToolsError
from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.model import Kind
from ci_tools.plan import matrix, sharding, source
from ci_tools.plan.binarycache import BinaryCache
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.matrix import Entry, Selection
from ci_tools.plan.runners import CheckScope, Inventory, load_inventory

REPO = Path(__file__).resolve().parent.parent
GOAL = 1.10
# The stated defaults (issue 28): a stack's build leg builds PyTorch (and TorchVision on it).
BUILD_S = {Kind.GPU: 2 * HOUR, Kind.CPU: 1 * HOUR, Kind.DARWIN: 1 * HOUR}
TEST_S = 5 * MINUTE  # per variant of the stack
GREEN_S = 1 * MINUTE  # a GitHub-hosted mark-green job, from queued to written
# GitHub's documented limits on content-creating requests ("Rate limits for the REST API").
LIMIT_HOUR, LIMIT_MINUTE = 500, 80


@dataclass(frozen=True, kw_only=True)
class Plan:
    branch: str
    entries: tuple[Entry, ...]
    inventory: Inventory
    kinds: Mapping[str, Kind]  # variant -> its kind


def plan(branch: str, runners: Path, *, cache: bool) -> Plan:
    """`ci-tools matrix --branch BRANCH --runners RUNNERS` as the workflow's plan job runs it
    (every stack: a first push, or --until-green with nothing green yet)."""
    catalog_path = REPO / "catalog.yaml"
    catalog = load_catalog(catalog_path, display_name="catalog.yaml")
    variants = source.from_catalog(catalog, catalog_path, branch, Checkout(root=REPO), {})
    inventory = load_inventory(runners, str(runners), variants.sms, variants.cpu_flags)
    if cache:  # what a runners.yaml `cache:` block changes: the pools build everything
        stand_in = BinaryCache(
            url="file:///sim",
            public_keys=("sim:0",),
            signing_key_secret="K",  # noqa: S106  the name of a secret, and none is read
        )
        inventory = replace(inventory, cache=stand_in)
    entries = matrix.plan(variants.targets, Selection(), inventory, branch=variants.branch)
    rows = matrix.rows(entries)
    return Plan(
        branch=variants.branch,
        entries=tuple(entries[: sharding.fit(rows)]),  # what one run takes, the rest waits
        inventory=inventory,
        kinds={t.name: t.kind for t in variants.targets},
    )


def stacks(planned: Plan, recorded: Mapping[str, float]) -> list[Stack]:
    gpu_labels = {r.labels for r in planned.inventory.test_runners}
    out = []
    for entry in planned.entries:
        placement = entry.placement
        default = BUILD_S[planned.kinds[entry.packages[0]]]
        known = [recorded.get(name) for name in entry.packages]
        build = sum(s for s in known if s is not None) if None not in known else default
        out.append(
            Stack(
                name=entry.name,
                build_on=placement.runs_on,
                test_on=placement.test_runs_on,
                build_s=build,
                test_s=TEST_S * len(entry.packages),
                gpu_result=placement.test is CheckScope.GPU
                and placement.test_runs_on in gpu_labels,
            )
        )
    return out


def ordered(stack_list: Sequence[Stack], order: str) -> list[Stack]:
    """`plan`: as `ci-tools matrix` emits them; `gpu-first`: the stacks with a GPU result
    first, then the longest build first (a stable sort: the plan's order breaks ties)."""
    if order == "plan":
        return list(stack_list)
    return sorted(stack_list, key=lambda s: (not s.gpu_result, -s.build_s))


def fleet(inventory: Inventory, per_pool: int, gpu_hosts: int) -> list[Host]:
    """N hosts per builder pool and `gpu_hosts` per test runner, each with its runner's labels."""
    hosts = [
        Host(name=f"{platform}-{n + 1}", labels=frozenset(pool.labels))
        for platform, pool in inventory.builders.items()
        for n in range(per_pool)
    ]
    for runner in inventory.test_runners:
        tag = runner.labels[-1]
        hosts += [
            Host(name=f"{tag}-{n + 1}", labels=frozenset(runner.labels), gpu=True)
            for n in range(gpu_hosts)
        ]
    return hosts


def load_recorded(directory: Path | None) -> dict[str, float]:
    """variant -> its build's seconds, from the result records under `directory`."""
    if directory is None:
        return {}
    from ci_tools.build.results import load_dir

    return {r.variant: r.build.seconds for r in load_dir(directory) if r.build is not None}


def hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / HOUR:.2f} h"


def ratio(value: float | None, bound: float | None) -> str:
    if value is None or bound is None or bound <= 0:
        return "-"
    return f"{value / bound:.2f}x"


def share(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def report(label: str, shape: str, got: Figures, bound: Bounds, goal: bool) -> list[str]:
    """Two lines: push-to-green (with the goal where `goal`), then the other figures."""
    verdict = ""
    if goal:
        met = got.push_to_green <= GOAL * bound.push_to_green
        verdict = f" (goal <= {GOAL:.2f}x: {'met' if met else 'MISSED'})"
    return [
        f"fleet {label}, {shape}: push-to-green {hours(got.push_to_green)}, bound "
        f"{hours(bound.push_to_green)}; ratio {ratio(got.push_to_green, bound.push_to_green)}"
        + verdict,
        f"fleet   first GPU result {hours(got.first_gpu)} (bound {hours(bound.first_gpu)}, "
        f"{ratio(got.first_gpu, bound.first_gpu)}); GPU hosts idle {share(got.gpu_idle)} "
        f"(bound {share(bound.gpu_idle)}); {got.writes} REST writes, busiest hour "
        f"{got.peak_hour} (bound {bound.peak_hour}; GitHub: {LIMIT_HOUR}), busiest minute "
        f"{got.peak_minute} (GitHub: {LIMIT_MINUTE})",
    ]


def run(
    planned: Plan, stack_list: Sequence[Stack], per_pool: int, args: argparse.Namespace
) -> None:
    hosts = fleet(planned.inventory, per_pool, args.gpu_hosts)
    gpu = sum(h.gpu for h in hosts)
    label = f"{planned.branch}, {per_pool} per pool + {gpu} GPU host{'s' * (gpu != 1)}"
    shards = sharding.shard(stack_list)  # as --github-output splits the matrix
    bound = fleet_sim.bounds(stack_list, hosts, GREEN_S)
    print(
        f"fleet {label}: bound = max(critical path {hours(bound.critical_path)}, "
        f"{bound.busiest_group}'s work {hours(bound.load)}) + a green"
    )
    shapes = [
        (fleet_sim.old_shape(shards, GREEN_S), False),
        (fleet_sim.new_shape(stack_list, GREEN_S), not args.cache),
    ]
    if args.merged:
        shapes.append((fleet_sim.new_shape(stack_list, GREEN_S, merge_same_runner=True), False))
    for shape, goal in shapes:
        got = fleet_sim.figures(fleet_sim.simulate(shape, hosts), hosts)
        for line in report(label, f"{shape.name} shape", got, bound, goal):
            print(line)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--branch", default="main", help="the catalog branch (default: main)")
    parser.add_argument("--runners", type=Path, default=REPO / "runners.yaml")
    parser.add_argument("--hosts", default="1,4", help="hosts per builder pool, comma-separated")
    parser.add_argument("--gpu-hosts", type=int, default=1, help="hosts per test runner")
    parser.add_argument("--records", type=Path, help="result records: build durations")
    parser.add_argument(
        "--cache", action="store_true", help="as if runners.yaml named a cache (no goal)"
    )
    parser.add_argument(
        "--order",
        choices=("plan", "gpu-first"),
        default="plan",
        help="the matrix's order: as planned, or GPU-result stacks then longest builds first",
    )
    parser.add_argument(
        "--merged",
        action="store_true",
        help="also the new shape with build and test in one job where they share a runner",
    )
    args = parser.parse_args(argv)
    try:
        per_pool = [int(n) for n in args.hosts.split(",")]
        if min(per_pool) < 1 or args.gpu_hosts < 1:
            raise ValueError
    except ValueError:
        print(f"--hosts {args.hosts} / --gpu-hosts: positive whole numbers", file=sys.stderr)
        return 2
    try:
        planned = plan(args.branch, args.runners, cache=args.cache)
        recorded = load_recorded(args.records)
    except CiToolsError as exc:
        print(f"bench_fleet: {exc}", file=sys.stderr)
        return 2
    stack_list = ordered(stacks(planned, recorded), args.order)
    timed = sum(all(p in recorded for p in e.packages) for e in planned.entries)
    print(
        f"fleet {planned.branch}: {len(stack_list)} stacks in {len(sharding.shard(stack_list))} "
        f"shard(s), {args.order} order, "
        f"{sum(s.gpu_result for s in stack_list)} with a GPU result; "
        f"{'a cache (pools build everything)' if args.cache else 'runners.yaml as it is'}; "
        f"build {timed} from records, the rest {BUILD_S[Kind.GPU] / HOUR:.0f} h a GPU stack, "
        f"{BUILD_S[Kind.CPU] / HOUR:.0f} h a CPU or darwin one; tests {TEST_S / MINUTE:.0f} min "
        f"a variant; mark-green {GREEN_S / MINUTE:.0f} min; FIFO by queue time"
    )
    for count in per_pool:
        run(planned, stack_list, count, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
