"""The fleet simulation's pure core (issue 28, item 8): one run's jobs on a fleet of hosts.

A run is a set of jobs, each with the labels of its `runs-on` (None: a GitHub-hosted job,
which never waits for a machine), a duration, and the jobs it `needs`. A job is queued when
every job it needs has ended. The model of GitHub's scheduling, stated because GitHub does
not document its order: a self-hosted runner runs one job at a time; a queued job may run on
any host that has all its labels ("Choosing the runner for a job": a job goes to a runner
that matches every label); queued jobs are served first come, first served (FIFO by the time
they were queued, ties in the order the workflow lists them), each on the first free host
that matches. No job fails and no host goes offline.

Two workflow shapes are expressed as such jobs (`old_shape`, `new_shape`), and `bounds` gives
what no schedule can beat: the critical path and each host group's work over its hosts.
Everything here is pure: no files, no clocks; seconds are numbers.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ci_tools.plan.greens_aggregate import PER_CHECK_RUN

HOUR = 3600.0
# Greens one check run holds (65,535 characters of output text, one line of 33 a stack).
GREENS_PER_CHECK = PER_CHECK_RUN
MINUTE = 60.0


@dataclass(frozen=True, kw_only=True)
class Host:
    name: str
    labels: frozenset[str]
    gpu: bool = False  # a test runner (runners.yaml test_runners): its idle time is counted


@dataclass(frozen=True, kw_only=True)
class Stack:
    """One matrix entry as the simulation needs it."""

    name: str
    build_on: tuple[str, ...]  # runs_on
    test_on: tuple[str, ...]  # test_runs_on
    build_s: float
    test_s: float
    gpu_result: bool  # its test leg proves it on a GPU host (a "GPU result")


@dataclass(frozen=True, kw_only=True)
class Job:
    key: str
    labels: frozenset[str] | None  # None: GitHub-hosted
    seconds: float
    needs: tuple[str, ...] = ()
    writes: int = 0  # REST writes it makes when it ends (statuses, check runs)
    gpu_result: bool = False


@dataclass(frozen=True, kw_only=True)
class Ran:
    job: Job
    host: str | None  # None: GitHub-hosted
    queued: float
    start: float
    end: float


@dataclass(frozen=True, kw_only=True)
class Shape:
    name: str
    jobs: tuple[Job, ...] = field(default=())


def _labels(labels: Sequence[str]) -> frozenset[str]:
    return frozenset(labels)


def old_shape(shards: Sequence[Sequence[Stack]], green_s: float) -> Shape:
    """Today's main: per shard, every build leg (a matrix), then every test leg once ALL build
    legs of the shard ended (`test: needs: build`), then one mark-green job after all tests,
    which writes one status per stack of the shard."""
    jobs: list[Job] = []
    for index, shard in enumerate(shards):
        builds = [f"{index}/build/{s.name}" for s in shard]
        tests = [f"{index}/test/{s.name}" for s in shard]
        jobs += [
            Job(key=key, labels=_labels(s.build_on), seconds=s.build_s)
            for key, s in zip(builds, shard, strict=True)
        ]
        jobs += [
            Job(
                key=key,
                labels=_labels(s.test_on),
                seconds=s.test_s,
                needs=tuple(builds),
                gpu_result=s.gpu_result,
            )
            for key, s in zip(tests, shard, strict=True)
        ]
        jobs.append(
            Job(
                key=f"{index}/mark-green",
                labels=None,
                seconds=green_s,
                needs=tuple(tests),
                writes=len(shard),
            )
        )
    return Shape(name="old", jobs=tuple(jobs))


def new_shape(stacks: Sequence[Stack], green_s: float, *, merge_same_runner: bool = False) -> Shape:
    """Per stack an independent chain build -> test -> mark-green: the test leg is queued when
    its own build ends, the green written when its own test ends. `merge_same_runner`: a stack
    whose build and test legs name the same runner runs both in one job (no queueing between)."""
    jobs: list[Job] = []
    for stack in stacks:
        build, test = f"build/{stack.name}", f"test/{stack.name}"
        if merge_same_runner and stack.build_on == stack.test_on:
            jobs.append(
                Job(
                    key=test,
                    labels=_labels(stack.build_on),
                    seconds=stack.build_s + stack.test_s,
                    gpu_result=stack.gpu_result,
                )
            )
        else:
            jobs.append(Job(key=build, labels=_labels(stack.build_on), seconds=stack.build_s))
            jobs.append(
                Job(
                    key=test,
                    labels=_labels(stack.test_on),
                    seconds=stack.test_s,
                    needs=(build,),
                    gpu_result=stack.gpu_result,
                )
            )
        # The stack's green is recorded as an artifact (no request) when its test ends...
        jobs.append(Job(key=f"green/{stack.name}", labels=None, seconds=green_s, needs=(test,)))
    # ...and the run's `greens` job publishes them all: one check run per GREENS_PER_CHECK.
    greens = tuple(f"green/{stack.name}" for stack in stacks)
    checks = math.ceil(len(stacks) / GREENS_PER_CHECK)
    jobs.append(Job(key="greens", labels=None, seconds=green_s, needs=greens, writes=checks))
    name = "new, build+test one job on one runner" if merge_same_runner else "new"
    return Shape(name=name, jobs=tuple(jobs))


def eligible(job: Job, hosts: Sequence[Host]) -> tuple[int, ...]:
    """The indexes of the hosts that may run `job`: those with every one of its labels."""
    assert job.labels is not None
    return tuple(i for i, h in enumerate(hosts) if job.labels <= h.labels)


def simulate(shape: Shape, hosts: Sequence[Host]) -> tuple[Ran, ...]:
    """Run `shape` on `hosts` (the model in the module's docstring); a job no host can run is
    a ValueError naming it, as GitHub would leave it queued for ever."""
    jobs = {job.key: job for job in shape.jobs}
    order = {job.key: n for n, job in enumerate(shape.jobs)}
    waiting_on = {job.key: set(job.needs) for job in shape.jobs}
    dependents: dict[str, list[str]] = {key: [] for key in jobs}
    fits = {job.key: eligible(job, hosts) for job in shape.jobs if job.labels is not None}
    for job in shape.jobs:
        for need in job.needs:
            dependents[need].append(job.key)
        if job.labels is not None and not fits[job.key]:
            raise ValueError(f"no host has every label of {job.key}: {sorted(job.labels)}")
    queue: list[tuple[float, int, str]] = []  # (queued at, workflow order, key)
    ends: list[tuple[float, int, str]] = []  # (end, workflow order, key): running jobs
    busy: dict[int, str] = {}
    host_of: dict[str, int] = {}
    started: dict[str, tuple[float, float]] = {}  # key -> (queued, start)
    ran: list[Ran] = []
    now = 0.0
    for job in shape.jobs:
        if not job.needs:
            heapq.heappush(queue, (0.0, order[job.key], job.key))
    while queue or ends:
        queue = _dispatch(queue, jobs, fits, busy, host_of, started, ends, now)
        if not ends:
            break
        now = ends[0][0]
        while ends and ends[0][0] == now:  # every job ending now frees its host first
            _, _, key = heapq.heappop(ends)
            host = host_of.pop(key, None)
            if host is not None:
                del busy[host]
            queued, start = started[key]
            name = hosts[host].name if host is not None else None
            ran.append(Ran(job=jobs[key], host=name, queued=queued, start=start, end=now))
            for dependent in dependents[key]:
                waiting_on[dependent].discard(key)
                if not waiting_on[dependent]:
                    heapq.heappush(queue, (now, order[dependent], dependent))
    return tuple(sorted(ran, key=lambda r: (r.end, order[r.job.key])))


def _dispatch(
    queue: list[tuple[float, int, str]],
    jobs: Mapping[str, Job],
    fits: Mapping[str, tuple[int, ...]],  # job -> the hosts that may run it
    busy: dict[int, str],
    host_of: dict[str, int],
    started: dict[str, tuple[float, float]],
    ends: list[tuple[float, int, str]],
    now: float,
) -> list[tuple[float, int, str]]:
    """Start what can start at `now`, oldest queued first; the jobs left waiting."""
    left: list[tuple[float, int, str]] = []
    for queued, seq, key in sorted(queue):
        job = jobs[key]
        if job.labels is None:
            host = None
        else:
            free = [i for i in fits[key] if i not in busy]
            if not free:
                left.append((queued, seq, key))
                continue
            host = free[0]
            busy[host] = key
            host_of[key] = host
        started[key] = (queued, now)
        heapq.heappush(ends, (now + job.seconds, seq, key))
    heapq.heapify(left)
    return left


# --- figures -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Figures:
    push_to_green: float  # when the last status is written
    first_gpu: float | None  # when the first GPU test leg ends; None: the run has none
    gpu_idle: float | None  # the GPU hosts' idle share of [0, push_to_green]; None: no GPU host
    writes: int
    peak_hour: int  # statuses written in the busiest hour (a sliding window)
    peak_minute: int


def figures(ran: Sequence[Ran], hosts: Sequence[Host]) -> Figures:
    end = max((r.end for r in ran if r.job.writes), default=0.0)
    gpu_results = [r.end for r in ran if r.job.gpu_result]
    gpu_hosts = {h.name for h in hosts if h.gpu}
    busy = sum(min(r.end, end) - min(r.start, end) for r in ran if r.host in gpu_hosts)
    writes = [(r.end, r.job.writes) for r in ran if r.job.writes]
    return Figures(
        push_to_green=end,
        first_gpu=min(gpu_results) if gpu_results else None,
        gpu_idle=1 - busy / (len(gpu_hosts) * end) if gpu_hosts and end > 0 else None,
        writes=sum(n for _, n in writes),
        peak_hour=peak(writes, HOUR),
        peak_minute=peak(writes, MINUTE),
    )


def peak(writes: Iterable[tuple[float, int]], window: float) -> int:
    """The most writes within any `window` seconds ([t, t + window))."""
    points = sorted(writes)
    best = total = 0
    first = 0
    for time, count in points:
        total += count
        while points[first][0] <= time - window:
            total -= points[first][1]
            first += 1
        best = max(best, total)
    return best


@dataclass(frozen=True, kw_only=True)
class Bounds:
    push_to_green: float  # max(critical path, each host group's work / its hosts) + a green
    critical_path: float
    busiest_group: str  # the host group whose work sets the load bound
    load: float  # that group's work / its hosts, without the green
    first_gpu: float | None  # the shortest build + test of a stack with a GPU result
    gpu_idle: float | None  # the least idle share a run that ends at push_to_green can have
    peak_hour: int  # every write spread evenly over push_to_green


def bounds(stacks: Sequence[Stack], hosts: Sequence[Host], green_s: float) -> Bounds:
    """What no schedule of `stacks` on `hosts` can beat, whatever the workflow's shape. Each
    stack needs its build, then its test, then a green: the critical path. A job may run only
    on hosts with its labels: the work of every job confined to a group of hosts, over the
    group's size, is a bound, and the last such job is still followed by a green."""
    work: dict[frozenset[int], float] = {}
    for stack in stacks:
        for labels, seconds in ((stack.build_on, stack.build_s), (stack.test_on, stack.test_s)):
            group = frozenset(i for i, h in enumerate(hosts) if _labels(labels) <= h.labels)
            work[group] = work.get(group, 0.0) + seconds
    load, busiest = 0.0, ""
    for group in work:
        confined = sum(seconds for other, seconds in work.items() if other <= group)
        if group and confined / len(group) > load:
            load, busiest = confined / len(group), _group_name(group, hosts)
    critical = max((s.build_s + s.test_s + green_s for s in stacks), default=0.0)
    push = max(critical, load + green_s if stacks else 0.0)
    gpu = [s.build_s + s.test_s for s in stacks if s.gpu_result]
    gpu_hosts = frozenset(i for i, h in enumerate(hosts) if h.gpu)
    gpu_work = sum(seconds for group, seconds in work.items() if group and group <= gpu_hosts)
    writes = len(stacks)
    return Bounds(
        push_to_green=push,
        critical_path=critical,
        busiest_group=busiest,
        load=load,
        first_gpu=min(gpu) if gpu else None,
        gpu_idle=1 - gpu_work / (len(gpu_hosts) * push) if gpu_hosts and push > 0 else None,
        peak_hour=math.ceil(writes * min(1.0, HOUR / push)) if push > 0 else writes,
    )


def _group_name(group: frozenset[int], hosts: Sequence[Host]) -> str:
    names = sorted(hosts[i].name for i in group)
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]} ({len(names)} hosts)"
