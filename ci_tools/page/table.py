"""detect's answer for every question the selector page can ask, as data the page looks up.

Each answer is `answer.to_json(detect(...))` for the plain facts a selection stands for
(`choices`): the very function `ci-tools detect --json` prints, so the page has no choice logic
of its own. Answers repeat a lot; the table keeps each distinct one once, and each variant's
facts once (`{"$v": "branch/name"}` stands for them inside an answer).

    table["branch|python|workload|machine"][gpu][cpu] -> answer index, or for a GPU a list
    indexed by driver class (choices.driver_class)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ci_tools.catalog.model import Catalog, Platform
from ci_tools.host import answer, candidates
from ci_tools.host.detect import detect, workloads
from ci_tools.host.facts import Host
from ci_tools.page import choices

# What detect --json echoes of the question: the page knows it from the selection.
ECHO = ("branch", "package", "python", "workload", "machine", "platform", "driver")
PACKAGE = "pytorch"


@dataclass
class Answers:
    """Distinct answers and variants, each kept once."""

    answers: list[Any] = field(default_factory=list)
    variants: dict[str, Any] = field(default_factory=dict)
    _index: dict[str, int] = field(default_factory=dict)

    def add(self, data: Mapping[str, Any]) -> int:
        slim = {k: v for k, v in data.items() if k not in ECHO}
        slim = self._refs(slim)
        key = json.dumps(slim, sort_keys=True)
        if key not in self._index:
            self._index[key] = len(self.answers)
            self.answers.append(slim)
        return self._index[key]

    def _refs(self, value: Any) -> Any:
        if isinstance(value, dict):
            if "installs" in value and "branch" in value and "package" in value:
                ref = f"{value['branch']}/{value['package']}"
                self.variants[ref] = value
                return {"$v": ref}
            return {k: self._refs(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._refs(v) for v in value]
        return value


@dataclass(frozen=True, kw_only=True)
class Context:
    catalog: Catalog
    org: str
    built: candidates.Built
    known: answer.Known
    thresholds: tuple[int, ...]
    drivers: list[str | None]
    ccs: dict[str, str]


def context(catalog: Catalog, org: str) -> Context:
    built = candidates.Built.of(catalog)
    avoid = _catalog_text(catalog)
    thresholds = choices.driver_thresholds(catalog)
    drivers = choices.driver_representatives(thresholds)
    for rep in drivers:
        if rep is not None and rep in avoid:
            raise ValueError(f"the catalog's text holds {rep}; pick other representatives")
    return Context(
        catalog=catalog,
        org=org,
        built=built,
        known=answer.Known.of(catalog, built),
        thresholds=thresholds,
        drivers=drivers,
        ccs=choices.cc_representatives(choices.known_capabilities(catalog), avoid),
    )


def _catalog_text(catalog: Catalog) -> str:
    """Every string the catalog holds (and so every string an answer can quote from it)."""
    return repr(catalog)


def ask(ctx: Context, question: Mapping[str, str], host: Host) -> dict[str, Any]:
    """detect --json's answer for one selection's facts."""
    detection = detect(
        ctx.catalog,
        host,
        branch=question["branch"],
        package=PACKAGE,
        workload=question["workload"],
        python=question["python"],
        built=ctx.built,
    )
    return answer.to_json(detection, ctx.org, ctx.known)


def build(ctx: Context) -> tuple[dict[str, Any], Answers]:
    """The whole table: every branch, Python, workload, machine, GPU, CPU and driver class."""
    store = Answers()
    table: dict[str, Any] = {}
    for branch in ctx.catalog.branches.values():
        for python in branch.python:
            for workload in workloads(ctx.catalog):
                for machine in choices.machines():
                    question = {"branch": branch.name, "python": python, "workload": workload}
                    key = "|".join((branch.name, python, workload, machine.id))
                    table[key] = _machine_rows(ctx, store, question, machine)
    return table, store


def _machine_rows(
    ctx: Context, store: Answers, question: Mapping[str, str], machine: choices.Machine
) -> dict[str, Any]:
    if machine.platform is Platform.AARCH64_DARWIN:
        return {"-": {"-": store.add(ask(ctx, question, Host(machine=machine.id)))}}
    rows: dict[str, Any] = {}
    gpus = [choices.NO_GPU, *ctx.catalog.gpus, *ctx.ccs]
    for cpu in choices.fit_sets(ctx.catalog, machine.platform):
        for gpu in gpus:
            cells = rows.setdefault(gpu, {})
            if gpu == choices.NO_GPU:
                host = Host.described(machine=machine.id, cpu_flags=cpu.flags)
                cells[cpu.key] = store.add(ask(ctx, question, host))
                continue
            cells[cpu.key] = [
                store.add(_gpu_answer(ctx, question, machine.id, gpu, cpu.flags, driver))
                for driver in ctx.drivers
            ]
    return rows


def _gpu_answer(
    ctx: Context,
    question: Mapping[str, str],
    machine: str,
    gpu: str,
    flags: tuple[str, ...],
    driver: str | None,
) -> dict[str, Any]:
    capability = ctx.ccs.get(gpu) or ctx.catalog.gpus[gpu].capability
    host = Host.described(
        machine=machine, capabilities=[capability], cpu_flags=flags, driver=driver
    )
    data = ask(ctx, question, host)
    if gpu in ctx.ccs:
        data = marked(data, capability, choices.CC_MARKER)
    return marked(data, driver, choices.DRIVER_MARKER) if driver else data


def marked(value: Any, text: str, marker: str) -> Any:
    """`value` with every `text` inside its strings replaced by `marker`. `text` is digits and
    dots (a capability or a driver): JSON writes it as it is, and no key or number holds it."""
    encoded = json.dumps(value, ensure_ascii=False)
    if text not in encoded:
        return value
    return json.loads(encoded.replace(text, marker))
