"""Checks as `ci-tools test` itself records them, for the tests of what judges records by the
publish policy (mark-green, publish, release, report, the page): made by its own `evaluate`
and `static_proofs` (build/smoke/evaluate.py) from facts a build that passes would report,
so a record made here is one the real test path can write, and nothing more."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ci_tools.build.results import Check, ResultRecord
from ci_tools.build.smoke import evidence
from ci_tools.build.smoke.evaluate import evaluate, static_proofs
from ci_tools.build.smoke.expect import Expectations, expectations_for, from_catalog
from ci_tools.catalog import variants
from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.model import Catalog, Kind
from ci_tools.commands import _green

# What objdump reads of the CPU torch 2.13.0 wheel's libtorch_cpu.so (build/smoke/evidence.py).
WHEEL_FUNCTIONS = 84803


def expect(catalog: Catalog, branch: str, name: str) -> Expectations:
    return expectations_for(variants.find(catalog, branch, name))


def expected_here(branch: str, names: Iterable[str]) -> dict[str, Expectations]:
    """The expectations mark-green computes in the current directory's checkout (its catalog,
    or the one its recipes' names make)."""
    return _green.expectations(argparse.Namespace(catalog=None, branch=None), branch, names)


def _sass_fact(wanted: Expectations) -> dict[str, Any]:
    arch = wanted.arch or "sm_0"
    return {"libraries": {"libtorch_cuda.so": {"sass": [arch], "ptx": []}}}


def _facts(wanted: Expectations, *, gpu: bool) -> dict[str, Any]:
    ok = {"ok": True, "detail": "fine"}
    facts: dict[str, Any] = {
        "import:torch": {"ok": True, "detail": "/nix/store/x/torch/__init__.py"},
        "torch.version": wanted.torch_version or "0",
        "torch.version.cuda": wanted.cuda,
        "torch.arch_list": [wanted.arch] if wanted.arch else [],
        "torch.cudnn": wanted.cudnn,
        "cpu.capability": wanted.cpu_capability or "DEFAULT",
        "work:cpu_mlp": ok,
        "work:cpu_compile": ok,
        "cuda.devices": [{"name": "GPU", "capability": wanted.gpu_capability}] if gpu else [],
        "mps.available": True,
        "work:mps_matmul": ok,
    }
    if wanted.kind is Kind.GPU:
        facts["sass"] = _sass_fact(wanted)
    if gpu:
        facts["cuda.device"] = 0
    for kernel in wanted.isa_kernels:
        facts[f"work:{kernel}"] = ok
    for dep in wanted.dependents:
        facts[f"import:{dep.import_name}"] = {"ok": True, "detail": "x"}
        facts[f"{dep.import_name}.version"] = dep.version or "0"
    for name in ("gpu_mlp", "gpu_matmul", "gpu_compile", "gpu_nms"):
        facts[f"work:{name}"] = ok
    return facts


def ran(wanted: Expectations) -> tuple[Check, ...]:
    """Every check passed on hardware of the variant's kind (its GPU, its ISA, a Mac)."""
    return evaluate(_facts(wanted, gpu=True), wanted)


def ran_cpu(wanted: Expectations) -> tuple[Check, ...]:
    """A GPU variant on a CPU runner of its ISA: its GPU checks skipped, its SASS static."""
    return evaluate(_facts(wanted, gpu=False), wanted)


def static(wanted: Expectations, functions: int = WHEEL_FUNCTIONS) -> tuple[Check, ...]:
    """A static leg: nothing run, the SASS listing and the ISA's instructions held."""
    flags = evidence.proven_flags(wanted.platform, wanted.cpuinfo)
    facts: dict[str, Any] = {"sass": _sass_fact(wanted)}
    if wanted.isa is not None:
        detail = evidence.isa_proven(
            "libtorch_cpu.so", {f: "vinsn %ymm0" for f in flags}, wanted.isa, functions
        )
        facts["isa"] = {"ok": True, "detail": detail}
    return static_proofs(facts, wanted, "no runner of the fleet runs it")


@functools.cache
def _repo_catalog() -> Catalog:
    root = Path(__file__).resolve().parent.parent
    return load_catalog(root / "catalog.yaml", display_name="catalog.yaml")


def repo_expect(branch: str, name: str) -> Expectations:
    """The expectations of a variant of this repository's own catalog.yaml."""
    return expect(_repo_catalog(), branch, name)


def repo_expect_of(record: ResultRecord) -> Expectations | None:
    """`expect_of` for records of variants of this repository's catalog.yaml."""
    return from_catalog(_repo_catalog())(record)
