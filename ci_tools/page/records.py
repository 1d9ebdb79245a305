"""What the release records say of each variant, as the page shows it: its three sizes, how it
was proven, the org it went to and the date. Pure: records in, plain data out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from ci_tools.build import policy
from ci_tools.build.results import ResultRecord, Status
from ci_tools.build.smoke.expect import Expectations, ExpectOf

# Checks that run the build's code on its own GPU, or on a CPU with its ISA (smoke/evaluate.py).
_GPU_RUNS = ("gpu-mlp", "gpu-matmul", "gpu-compile", "gpu-nms")
_CPU_RUNS = ("cpu-mlp", "cpu-compile", "bf16-matmul", "int8-linear")


def proof(record: ResultRecord) -> str:
    """How far the record proves the variant, in one line."""
    if record.build is None or record.build.status is not Status.PASSED:
        return "not built"
    test = record.test
    if test is None:
        return "built, not tested"
    # A static proof (the SASS cuobjdump lists) counts as what it proves.
    passed = {c.name for c in test.checks if c.status in (Status.PASSED, Status.STATIC)}
    failed = [c.name for c in test.checks if c.status is Status.FAILED]
    if failed:
        return "failed " + ", ".join(failed)
    ways = []
    if passed & set(_GPU_RUNS):
        ways.append("ran on a GPU of its SM")
    elif "sass" in passed:
        ways.append("its GPU code checked statically (SASS), not run on its GPU")
    if passed & set(_CPU_RUNS):
        ways.append("ran on a CPU with its instruction set")
    if "mps" in passed:
        ways.append("ran on Apple Silicon (MPS)")
    if not ways:
        return "built; every check skipped on its runner"
    return "; ".join(ways)


def variant_facts(record: ResultRecord, expect: Expectations | None) -> dict[str, Any]:
    """`expect`: the catalog's expectations of the variant (the publish policy's yardstick)."""
    publish = record.publish
    started = record.build.started_at if record.build is not None else None
    return {
        "sizes": asdict(record.sizes),
        # The policy's judgement first: checks `ci-tools test` never makes prove nothing.
        "proven": _not_as_tested(record, expect) or proof(record),
        "passed": policy.publishable(record, expect),
        "org": publish.org if publish is not None and record.published else None,
        "date": started[:10] if started else None,
        "commit": record.commit[:12] if record.commit else None,
    }


def _not_as_tested(record: ResultRecord, expect: Expectations | None) -> str:
    if record.test is None or not record.built:
        return ""
    why = policy.not_as_tested(record, expect)
    return f"not proven: {why}" if why else ""


def by_variant(
    records: Iterable[ResultRecord], branches: Iterable[str], expect_of: ExpectOf
) -> Mapping[str, dict[str, Any]]:
    """`branch/name` -> the record's facts, for the branches the page shows; a later record of
    one variant replaces an earlier one."""
    shown = set(branches)
    return {
        f"{r.branch}/{r.variant}": variant_facts(r, expect_of(r))
        for r in records
        if r.branch in shown
    }
