"""The publish policy (build/policy.py) and the proof coverage (build/coverage.py): how a
record's checks prove its variant, what the fleet's route asks, and how it is said."""

from __future__ import annotations

import pytest

from ci_tools.build import coverage, policy, results
from ci_tools.build.policy import Proof
from ci_tools.build.results import BuildOutcome, Check, ResultRecord, Route, Status

GPU = "pytorch-python313-cuda12_8-sm100-avx512bf16"
CPU = "pytorch-python313-cpu-avx512bf16"
MAC = "pytorch-python313-darwin-mps"


def _record(name: str, *checks: tuple[str, Status], route: Route | None = None) -> ResultRecord:
    said = tuple(Check(name=n, status=s) for n, s in checks)
    return ResultRecord(
        variant=name,
        package="pytorch",
        branch="main",
        platform="aarch64-darwin" if "darwin" in name else "x86_64-linux",
        build=BuildOutcome(status=Status.PASSED, seconds=1.0),
        test=results.TestOutcome(
            status=results.test_status(said), checks=said, runner="gpu-sm100-1", route=route
        ),
    )


P, S, K, F = Status.PASSED, Status.STATIC, Status.SKIPPED, Status.FAILED


@pytest.mark.parametrize(
    ("record", "proof"),
    [
        (_record(GPU, ("cpu-mlp", P), ("gpu-mlp", P), ("sass", S)), Proof.RAN),
        (_record(GPU, ("cpu-mlp", P), ("gpu-mlp", K), ("sass", S)), Proof.RAN_CPU),
        (_record(GPU, ("cpu-mlp", K), ("sass", S), ("isa-code", S)), Proof.STATIC),
        (_record(GPU, ("cpu-mlp", K), ("sass", S)), Proof.UNPROVEN),  # its CPU code unproven
        (_record(GPU, ("cpu-mlp", P), ("gpu-mlp", P), ("sass", F)), Proof.UNPROVEN),
        (_record(CPU, ("cpu-mlp", P), ("bf16-matmul", P)), Proof.RAN),
        (_record(CPU, ("cpu-mlp", K), ("isa-code", S)), Proof.STATIC),
        (_record(CPU, ("cpu-mlp", K)), Proof.UNPROVEN),
        (_record(CPU), Proof.UNPROVEN),  # no checks prove nothing
        (_record(MAC, ("cpu-mlp", P), ("mps", P)), Proof.RAN),
        (_record(MAC, ("cpu-mlp", P), ("mps", K)), Proof.UNPROVEN),
    ],
)
def test_a_record_is_proven_by_its_checks(record: ResultRecord, proof: Proof) -> None:
    assert policy.proof_of(record) is proof


def test_what_the_fleet_can_do_sets_the_bar() -> None:
    static = _record(CPU, ("cpu-mlp", K), ("isa-code", S))
    assert policy.judge(static, "static").allowed
    assert policy.judge(static, "none").allowed
    refused = policy.judge(static, "cpu")
    assert not refused.allowed and "proven only static, but the fleet can do ran" in refused.why
    ran_cpu = _record(GPU, ("cpu-mlp", P), ("sass", S))
    assert policy.judge(ran_cpu, "cpu").allowed and not policy.judge(ran_cpu, "gpu").allowed
    assert policy.judge(None, "static").why == "no result record"


def test_how_a_variant_was_proven_is_said_for_people() -> None:
    ran = _record(GPU, ("cpu-mlp", P), ("gpu-mlp", P), ("sass", S))
    assert policy.describe(ran) == "ran on sm100 (gpu-sm100-1)"
    why = "no x86_64-linux test runner has an sm100 GPU"
    static = _record(
        GPU, ("cpu-mlp", K), ("sass", S), ("isa-code", S), route=Route(scope="static", reason=why)
    )
    assert policy.describe(static) == (
        f"static: SASS sm_100 only, avx512bf16 code, nothing above it; {why}"
    )
    failed = _record(CPU, ("cpu-mlp", F))
    assert policy.describe(failed) == "failed: cpu-mlp"


def test_coverage_per_sm_and_isa() -> None:
    records = [
        _record(GPU, ("cpu-mlp", P), ("gpu-mlp", P), ("sass", S)),
        _record(CPU, ("cpu-mlp", K), ("isa-code", S)),
    ]
    cover = coverage.coverage(records, missing=["pytorch-python313-cuda12_8-sm90-avx2"])
    assert cover.total == {"ran": 1, "static": 1, "unproven": 1}
    assert cover.by_sm == {
        "sm100": {"ran": 1, "static": 0, "unproven": 0},
        "sm90": {"ran": 0, "static": 0, "unproven": 1},
    }
    assert cover.by_isa["avx512bf16"] == {"ran": 1, "static": 1, "unproven": 0}
    lines = coverage.markdown(cover)
    assert lines[0] == (
        "**Proof coverage of 3 variants: 1 ran on matching hardware, 1 proven statically "
        "only, 1 unproven**"
    )
    assert lines.index("| sm90 | 0 | 0 | 1 |") < lines.index("| sm100 | 1 | 0 | 0 |")
