"""The publish policy (build/policy.py) and the proof coverage (build/coverage.py): how a
record's checks prove its variant, what the fleet's route asks, and how it is said."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from ci_tools.build import coverage, policy, results
from ci_tools.build.policy import Proof
from ci_tools.build.results import BuildOutcome, Check, ResultRecord, Route, Status
from ci_tools.build.smoke import evidence
from ci_tools.build.smoke.expect import Expectations
from ci_tools.catalog.model import Catalog
from tests import proven

GPU = "pytorch-python313-cuda12_8-sm100-avx512bf16"
CPU = "pytorch-python313-cpu-avx512bf16"
MAC = "pytorch-python313-darwin-mps"


@pytest.fixture(scope="module")
def want(catalog: Catalog) -> dict[str, Expectations]:
    return {name: proven.expect(catalog, "main", name) for name in (GPU, CPU, MAC)}


def _record(
    name: str, checks: Sequence[Check], route: Route | None = None, schema: int = results.SCHEMA
) -> ResultRecord:
    return ResultRecord(
        variant=name,
        package="pytorch",
        branch="main",
        platform="aarch64-darwin" if "darwin" in name else "x86_64-linux",
        build=BuildOutcome(status=Status.PASSED, seconds=1.0),
        test=results.TestOutcome(
            status=results.test_status(checks),
            checks=tuple(checks),
            runner="gpu-sm100-1",
            route=route,
        ),
        schema=schema,
    )


P, S, K, F = Status.PASSED, Status.STATIC, Status.SKIPPED, Status.FAILED


def _set(checks: Sequence[Check], name: str, status: Status, detail: str = "") -> list[Check]:
    """`checks` with the one named `name` given `status` (and `detail`, when given)."""
    return [
        replace(c, status=status, detail=detail or c.detail) if c.name == name else c
        for c in checks
    ]


def test_records_as_ci_tools_test_writes_them_are_proven(want: dict[str, Expectations]) -> None:
    gpu, cpu, mac = want[GPU], want[CPU], want[MAC]
    cases = [
        (GPU, proven.ran(gpu), Proof.RAN),
        (GPU, proven.ran_cpu(gpu), Proof.RAN_CPU),
        (GPU, proven.static(gpu), Proof.STATIC),
        (CPU, proven.ran(cpu), Proof.RAN),
        (CPU, proven.static(cpu), Proof.STATIC),
        (MAC, proven.ran(mac), Proof.RAN),
    ]
    for name, checks, proof in cases:
        assert policy.proof_of(_record(name, checks), want[name]) is proof, (name, proof)
        assert policy.not_as_tested(_record(name, checks), want[name]) == ""


def test_less_than_its_checks_proves_nothing(want: dict[str, Expectations]) -> None:
    gpu, cpu, mac = want[GPU], want[CPU], want[MAC]
    cases = [
        (GPU, _set(proven.static(gpu), "isa-code", K)),  # its CPU code unproven
        (GPU, _set(proven.ran(gpu), "sass", F)),
        (GPU, _set(proven.ran(gpu), "gpu-mlp", K)[:-1]),  # a check left out
        (CPU, _set(proven.ran(cpu), "cpu-mlp", K)),
        (CPU, []),  # no checks prove nothing
        (MAC, _set(proven.ran(mac), "mps", K)),
    ]
    for name, checks in cases:
        assert policy.proof_of(_record(name, checks), want[name]) is Proof.UNPROVEN, checks


def test_a_record_is_judged_against_the_checks_ci_tools_test_makes(
    catalog: Catalog, want: dict[str, Expectations]
) -> None:
    """Issue 29: a cpu-avx2 record whose only check was {"name": "x", "status": "passed"} was
    marked green and published; so was a schema-1 sm61-avx2 record of import-torch passed
    and `sass: static` with no SASS listing (schema 1 predates `static`)."""
    avx2 = "pytorch-python313-cpu-avx2"
    lone = _record(avx2, [Check(name="x", status=P)])
    verdict = policy.judge(lone, "static", proven.expect(catalog, "main", avx2))
    assert not verdict.allowed and verdict.proof is Proof.UNPROVEN
    assert "checks not a check `ci-tools test` makes for it: x" in verdict.why
    sm61 = "pytorch-python313-cuda12_8-sm61-avx2"
    old = _record(
        sm61, [Check(name="import-torch", status=P), Check(name="sass", status=S)], schema=1
    )
    verdict = policy.judge(old, "cpu", proven.expect(catalog, "main", sm61))
    assert not verdict.allowed and verdict.proof is Proof.UNPROVEN
    assert "checks missing: torch-version" in verdict.why
    # Every check there, but `static` in schema 1, or without its evidence, is no proof.
    full = proven.ran_cpu(proven.expect(catalog, "main", sm61))
    assert policy.judge(_record(sm61, full), "cpu", proven.expect(catalog, "main", sm61)).allowed
    for record, said in (
        (_record(sm61, full, schema=1), "sass is static, but a schema-1 record predates"),
        (_record(sm61, _set(full, "sass", S, "cuobjdump says fine")), "no SASS listing"),
    ):
        verdict = policy.judge(record, "cpu", proven.expect(catalog, "main", sm61))
        assert not verdict.allowed and said in verdict.why, verdict.why


def test_static_only_where_a_check_has_a_static_form_and_its_evidence(
    want: dict[str, Expectations],
) -> None:
    cpu, gpu = want[CPU], want[GPU]
    refused = {
        "cpu-mlp is static, but it has no static form": _set(proven.ran(cpu), "cpu-mlp", S),
        "listing proves avx2": _set(
            proven.static(cpu),
            "isa-code",
            S,
            evidence.isa_proven("libtorch_cpu.so", {"avx2": "vpaddd"}, "avx2", 90000),
        ),
        "fewer than 1000: it cannot tell": proven.static(cpu, functions=0),
    }
    for said, checks in refused.items():
        why = policy.not_as_tested(_record(CPU, checks), cpu)
        assert said in why, why
    other_sm = evidence.sass_listing({"libtorch_cuda.so": (["sm_90"], [])})
    why = policy.not_as_tested(_record(GPU, _set(proven.ran(gpu), "sass", S, other_sm)), gpu)
    assert "holds other code than exactly sm_100" in why
    twice = [*proven.ran(cpu), Check(name="cpu-mlp", status=P)]
    assert "listed twice: cpu-mlp" in policy.not_as_tested(_record(CPU, twice), cpu)
    assert "not a variant of branch main" in policy.not_as_tested(
        _record(CPU, proven.ran(cpu)), None
    )


def test_what_the_fleet_can_do_sets_the_bar(want: dict[str, Expectations]) -> None:
    static = _record(CPU, proven.static(want[CPU]))
    assert policy.judge(static, "static", want[CPU]).allowed
    assert policy.judge(static, "none", want[CPU]).allowed
    refused = policy.judge(static, "cpu", want[CPU])
    assert not refused.allowed and "proven only static, but the fleet can do ran" in refused.why
    ran_cpu = _record(GPU, proven.ran_cpu(want[GPU]))
    assert policy.judge(ran_cpu, "cpu", want[GPU]).allowed
    assert not policy.judge(ran_cpu, "gpu", want[GPU]).allowed
    assert policy.judge(None, "static", None).why == "no result record"


def test_how_a_variant_was_proven_is_said_for_people(want: dict[str, Expectations]) -> None:
    ran = _record(GPU, proven.ran(want[GPU]))
    assert policy.describe(ran, want[GPU]) == "ran on sm100 (gpu-sm100-1)"
    why = "no x86_64-linux test runner has an sm100 GPU"
    static = _record(GPU, proven.static(want[GPU]), route=Route(scope="static", reason=why))
    assert policy.describe(static, want[GPU]) == (
        f"static: SASS sm_100 only, avx512bf16 code, nothing above it; {why}"
    )
    failed = _record(CPU, _set(proven.ran(want[CPU]), "cpu-mlp", F))
    assert policy.describe(failed, want[CPU]) == "failed: cpu-mlp"


def test_coverage_per_sm_and_isa(want: dict[str, Expectations]) -> None:
    records = [_record(GPU, proven.ran(want[GPU])), _record(CPU, proven.static(want[CPU]))]
    cover = coverage.coverage(
        records,
        lambda r: want[r.variant],
        missing=["pytorch-python313-cuda12_8-sm90-avx2"],
    )
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
