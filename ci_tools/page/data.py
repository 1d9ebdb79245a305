"""Everything the selector page knows, as one JSON object embedded in it: the questions and their
options (from the catalog), the table of detect's answers, and what the records say."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_tools.catalog.model import Catalog, Kind
from ci_tools.catalog.variants import Variant
from ci_tools.host import answer, facts, hostinfo
from ci_tools.host.candidates import Built, every_variant
from ci_tools.host.detect import workloads
from ci_tools.page import choices, gpu_names, published, table

SCHEMA = 1
FLAGS_COMMAND = "grep -m1 -E '^(flags|Features)' /proc/cpuinfo"
WORKLOAD_LABELS = {
    "general": "general use",
    "bf16-training": "bf16 training",
    "int8-inference": "int8 inference",
}


def page_data(
    catalog: Catalog, org: str, records: Mapping[str, Any], generated: str
) -> dict[str, Any]:
    ctx = table.context(catalog, org)
    rows, store = table.build(ctx)
    return {
        "schema": SCHEMA,
        "catalog": catalog.display_name,
        "generated": generated,
        "org": org,
        "package": table.PACKAGE,
        "patterns": {
            "capability": facts.CAPABILITY_PATTERN,
            "flag": facts.FLAG_PATTERN,
            "driver": facts.DRIVER_PATTERN,
        },
        "commands": {"flags": FLAGS_COMMAND, "gpu": " ".join(hostinfo.NVIDIA_SMI_QUERY)},
        "markers": {"cc": choices.CC_MARKER, "driver": choices.DRIVER_MARKER},
        **questions(catalog, ctx.built),
        "driver_thresholds": list(ctx.thresholds),
        "table": rows,
        "answers": store.answers,
        "variants": store.variants,
        "records": dict(records),
        "publication": published.publication(every_variant(catalog), records),
    }


def questions(catalog: Catalog, built: Built) -> dict[str, Any]:
    """The page's questions and their options."""
    machines = choices.machines()
    return {
        "machines": [
            {"id": m.id, "platform": m.platform.value, "label": m.label} for m in machines
        ],
        "aliases": dict(facts.MACHINE_ALIASES),
        "branches": [_branch(catalog, name) for name in catalog.branches],
        "workloads": [
            {"id": w, "label": WORKLOAD_LABELS.get(w, w.replace("-", " "))}
            for w in workloads(catalog)
        ],
        "gpus": [
            {
                "sm": g.name,
                "capability": g.capability,
                "family": g.family,
                "hardware": gpu_names.names(g.capability, g.hardware),
            }
            for g in catalog.gpus.values()
        ],
        "known_cc": choices.known_capabilities(catalog),
        "isas": {
            m.id: [
                {"name": i.name, "cpuinfo": list(i.cpuinfo)}
                for i in choices.platform_isas(catalog, m.platform)
            ]
            for m in machines
        },
        "cpu_classes": {
            m.id: [_cpu(c) for c in choices.named_classes(catalog, m.platform)] for m in machines
        },
        "cpu_default": {m.id: choices.default_class(catalog, m.platform) for m in machines},
        "fit_sets": {
            m.id: {c.key: _cpu(c) for c in choices.fit_sets(catalog, m.platform)} for m in machines
        },
        "dims": {
            branch: {
                m.id: {
                    gpu.name: why
                    for gpu in catalog.gpus.values()
                    if (why := choices.unavailable(catalog, built, branch, m, gpu, table.PACKAGE))
                }
                for m in machines
            }
            for branch in catalog.branches
        },
    }


def _cpu(c: choices.CpuClass) -> dict[str, Any]:
    return {"key": c.key, "label": c.label, "isas": list(c.isas), "flags": list(c.flags)}


def _branch(catalog: Catalog, name: str) -> dict[str, Any]:
    branch = catalog.branch(name)
    cudas = [t.cuda_short for t in branch.toolkits]
    torch = branch.versions.get(table.PACKAGE, "?")
    return {
        "name": name,
        "label": f"{torch} \u00b7 CUDA {', '.join(cudas)} \u00b7 {name}",
        "pythons": list(branch.python),
        "versions": dict(branch.versions),
    }


def variant_row(variant: Variant, org: str, record: Mapping[str, Any] | None) -> dict[str, Any]:
    """One line of the page's table of every variant (its no-script fallback)."""
    gpu = variant.gpu
    sizes = (record or {}).get("sizes") or {}
    return {
        "branch": variant.branch.name,
        "name": variant.name,
        "package": variant.package.name,
        "version": variant.version or "",
        "target": (
            "Apple Silicon (MPS)"
            if variant.kind is Kind.DARWIN
            else f"{gpu.name} ({gpu.family})"
            if gpu is not None
            else "CPU only"
        ),
        "isa": variant.isa.name if variant.isa is not None else "",
        "cuda": variant.cuda or "",
        "min_driver": _min_driver(variant),
        "python": variant.python,
        "sizes": [sizes.get(k) for k in ("cuda_libraries", "torch_package", "closure")],
        "proven": (record or {}).get("proven", ""),
        "install": answer.install_line(org, variant.name),
    }


def _min_driver(variant: Variant) -> int | str:
    """The least driver of a CUDA variant, "unknown" where nothing states it; "" for others."""
    if not variant.cuda or variant.toolkit is None:
        return ""
    return "unknown" if variant.toolkit.min_driver is None else variant.toolkit.min_driver
