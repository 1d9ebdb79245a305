"""A Detection as a person reads it, and as the JSON `ci-tools detect --json` prints.

Every view of detect's answer renders it here, so no two views can drift apart.
"""

from __future__ import annotations

from typing import Any

from ci_tools.host.choice import Recommendation
from ci_tools.host.detect import Detection


def install_line(org: str, package: str) -> str:
    return f"flox install {org}/{package}"


def render_text(detection: Detection, org: str) -> str:
    lines = []
    for rec in detection.recommendations:
        if rec.package is None:
            lines.append(f"no variant fits: {_subject(rec)}")
            lines.append(f"  why: {rec.reason}")
            continue
        lines.append(rec.package)
        lines.append(f"  why: {rec.reason}")
        lines.append(f"  {install_line(org, rec.package)}")
    return "\n".join(lines) + "\n"


def _subject(rec: Recommendation) -> str:
    if rec.gpu is None:
        return "this machine"
    sm = f" ({rec.gpu.sm})" if rec.gpu.sm else ""
    return f"{rec.gpu.label}{sm}"


def to_json(detection: Detection, org: str) -> dict[str, Any]:
    return {
        "branch": detection.branch,
        "package": detection.package,
        "python": detection.python,
        "workload": detection.workload,
        "machine": detection.machine,
        "platform": detection.platform.value if detection.platform else None,
        "recommendations": [_rec_json(r, org) for r in detection.recommendations],
        "warnings": list(detection.warnings),
        "ok": detection.ok,
        "exit_code": detection.exit_code,
    }


def _rec_json(rec: Recommendation, org: str) -> dict[str, Any]:
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
    return {
        "gpu": gpu,
        "package": rec.package,
        "isa": rec.isa,
        "reason": rec.reason,
        "install": install_line(org, rec.package) if rec.package else None,
        "alternatives": [{"branch": a.branch, "package": a.package} for a in rec.alternatives],
        "fallback": rec.fallback,
    }
