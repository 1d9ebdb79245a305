"""A Detection as a person reads it, and as the JSON `ci-tools detect --json` prints.

Every view of detect's answer renders it here (the command's text and JSON, the selector page's
table of answers), so no two views can drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ci_tools.catalog.model import Catalog, Kind
from ci_tools.catalog.variants import Variant
from ci_tools.host.candidates import Built, every_variant
from ci_tools.host.choice import Recommendation
from ci_tools.host.detect import Detection

ORG_PLACEHOLDER = "<org>"
# One line that shows what a build is: its version, its CUDA and the GPU code it carries.
VERIFY = (
    "flox activate -- python3 -c 'import torch; "
    "print(torch.__version__, torch.version.cuda, torch.cuda.get_arch_list())'"
)


def install_line(org: str, package: str) -> str:
    return f"flox install {org}/{package}"


@dataclass(frozen=True, kw_only=True)
class Known:
    """Every variant of a catalog by branch and name, with the stacks they belong to: what an
    answer tells about the variant it names. Build it once per catalog (`Known.of`)."""

    by_name: Mapping[tuple[str, str], Variant]
    stacks: Mapping[tuple[str, str, str], tuple[Variant, ...]]  # (branch, python, suffix)

    @classmethod
    def of(cls, catalog: Catalog, built: Built | None = None) -> Known:
        by_name: dict[tuple[str, str], Variant] = {}
        stacks: dict[tuple[str, str, str], list[Variant]] = {}
        every = built.every if built is not None else every_variant(catalog)
        for v in every:
            by_name[(v.branch.name, v.name)] = v
            stacks.setdefault((v.branch.name, v.python, v.suffix), []).append(v)
        ordered = {
            key: tuple(sorted(members, key=lambda v: (v.package.requires is not None, v.name)))
            for key, members in stacks.items()
        }
        return cls(by_name=by_name, stacks=ordered)

    def stack_of(self, variant: Variant) -> tuple[Variant, ...]:
        """The variant with the packages installed with it: torch first, then the packages
        built against it (torchvision, torchaudio) where the branch builds them."""
        return self.stacks[(variant.branch.name, variant.python, variant.suffix)]


UNKNOWN = "unknown"


def expected_output(variant: Variant, stack: Sequence[Variant]) -> str:
    """What VERIFY prints for this variant: torch's version, CUDA, the compiled GPU code (a
    CPU build's CUDA prints as Python's None). A version nothing states is said in words."""
    torch = stack[0].version or f"(the {stack[0].package.name} version, {UNKNOWN} to ci-tools)"
    if variant.kind is Kind.GPU and variant.gpu is not None:
        return f"{torch} {variant.cuda} ['sm_{variant.gpu.number}']"
    return f"{torch} None []"


def variant_json(known: Known, org: str, branch: str, name: str) -> dict[str, Any]:
    """What a person needs to install one variant and check it."""
    variant = known.by_name[(branch, name)]
    stack = known.stack_of(variant)
    return {
        "package": name,
        "branch": branch,
        "install": install_line(org, name),
        "installs": [install_line(org, v.name) for v in stack],
        "versions": {v.package.name: v.version for v in stack},
        "python": variant.python,
        "cuda": variant.cuda,
        "min_driver": variant.toolkit.min_driver
        if variant.cuda is not None and variant.toolkit
        else None,
        "verify": VERIFY,
        "expect": expected_output(variant, stack),
    }


def to_json(detection: Detection, org: str, known: Known) -> dict[str, Any]:
    return {
        "branch": detection.branch,
        "package": detection.package,
        "python": detection.python,
        "workload": detection.workload,
        "machine": detection.machine,
        "platform": detection.platform.value if detection.platform else None,
        "driver": detection.driver,
        "recommendations": [
            recommendation_json(r, detection.branch, org, known) for r in detection.recommendations
        ],
        "warnings": list(detection.warnings),
        "ok": detection.ok,
        "exit_code": detection.exit_code,
    }


def recommendation_json(rec: Recommendation, branch: str, org: str, known: Known) -> dict[str, Any]:
    gpu = None
    if rec.gpu is not None:
        gpu = {
            "name": rec.gpu.names[0] if rec.gpu.names else None,
            "names": list(rec.gpu.names),
            "count": rec.gpu.count,
            "capability": rec.gpu.capability,
            "sm": rec.gpu.sm,
            "family": rec.gpu.family,
        }
    variant = variant_json(known, org, branch, rec.package) if rec.package else None
    alternatives = [variant_json(known, org, a.branch, a.package) for a in rec.alternatives]
    return {
        "gpu": gpu,
        "package": rec.package,
        "isa": rec.isa,
        "reason": rec.reason,
        "install": install_line(org, rec.package) if rec.package else None,
        "variant": variant,
        "alternatives": alternatives,
        "fallback": variant_json(known, org, branch, rec.fallback) if rec.fallback else None,
        # What to install: this branch's variant, else the nearest branch's.
        "best": variant or (alternatives[0] if alternatives else None),
    }


def render_text(data: Mapping[str, Any]) -> str:
    """The JSON answer as a person reads it: per GPU (or for the machine) the variant, why,
    the driver it needs, the install lines and the command that proves the install."""
    lines: list[str] = []
    for rec in data["recommendations"]:
        best = rec["best"]
        if rec["package"] is not None:
            lines.append(rec["package"])
        else:
            lines.append(f"no {data['package']} variant on {data['branch']} fits {_subject(rec)}")
        lines.append(f"  why: {rec['reason']}")
        if best is None:
            fallback = rec["fallback"]
            if fallback is not None:
                lines.append(f"  without the GPU: {fallback['install']}")
            continue
        if rec["package"] is None:
            lines.append(f"  nearest: {best['package']} (branch {best['branch']})")
        lines += _install_block(best, data["driver"])
    return "\n".join(lines) + "\n"


def _install_block(best: Mapping[str, Any], driver: str | None) -> list[str]:
    versions = ", ".join(
        f"{name} {version or 'version ' + UNKNOWN}" for name, version in best["versions"].items()
    )
    cuda = f", CUDA {best['cuda']}" if best["cuda"] else ""
    lines = [f"  {versions}{cuda}, Python {best['python']}"]
    have = f" (this machine: {driver})" if driver else ""
    if best["min_driver"] is not None:
        lines.append(f"  needs NVIDIA driver >= {best['min_driver']}{have}")
    elif best["cuda"]:
        lines.append(
            f"  needs an NVIDIA driver for CUDA {best['cuda']}: its least version {UNKNOWN}{have}"
        )
    lines += [f"  {line}" for line in best["installs"]]
    lines.append(f"  verify: {best['verify']}")
    lines.append(f"  expect: {best['expect']}")
    return lines


def _subject(rec: Mapping[str, Any]) -> str:
    gpu = rec["gpu"]
    if gpu is None:
        return "this machine"
    sm = f" ({gpu['sm']})" if gpu["sm"] else ""
    label = " + ".join(gpu["names"]) or f"compute capability {gpu['capability']}"
    if gpu["count"] > 1:
        label = f"{gpu['count']} x {label}"
    return f"{label}{sm}"
