"""The publish policy, in one place: what a variant's record must show before it is published
(`ci-tools publish`), marked green (`ci-tools mark-green`), and how `report`, the release notes
and the step summary say it was proven. Pure.

    a hardware run where the fleet has a runner that can run the variant;
    otherwise the static proofs;
    never nothing.

How a record proved its variant (`Proof`, best first), read from its checks, never from
`test.status` alone (a record may say "passed" over checks that failed, were all skipped, or
are none):

* `ran`       every check ran on hardware of the variant's kind: a GPU of its SM and a CPU
              with its ISA (GPU), a CPU with its ISA (CPU), a Mac (MPS);
* `ran-cpu`   a GPU variant whose CPU checks ran on a CPU with its ISA and whose GPU code is
              proven statically (SASS of exactly its SM: cuobjdump);
* `static`    nothing ran; the static proofs held (SASS for GPU variants, and the ISA's
              instructions in libtorch_cpu.so with none above it: objdump);
* `unproven`  anything less.

A record is judged against the checks `ci-tools test` itself produces for the variant
(`evaluate.check_names` of the catalog's expectations, plus `isa-code` where the route is
static), never against the checks it happens to list: every expected check present, once; no
other name; `static` only for the checks that have a static form (`sass` of a GPU variant,
`isa-code` of one with an ISA) and only with their evidence (`smoke/evidence.py`: the SASS
listing of exactly its SM, the ISA's instructions among at least `ISA_FLOOR` of torch's own
functions); never `static` in a schema-1 record (schema 1 predates it). A record of a variant
the catalog does not have proves nothing.

What the fleet can do for a variant is the matrix's routing (`Route.scope`, from runners.yaml):
`gpu` asks `ran`, `cpu` asks `ran` of a CPU variant and `ran-cpu` of a GPU one, `static` (and
`none`) ask `static`. A variant is publishable when no check failed and its proof is at least
what its route asks. The route is recomputed from the current runners.yaml by the commands
that decide (publish, mark-green), so a record cannot lower the bar it is judged by.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ci_tools.build.results import Check, ResultRecord, Status
from ci_tools.build.smoke import evidence
from ci_tools.build.smoke.evaluate import GPU_CHECKS, ISA_CODE, MPS_CHECK, SASS, check_names
from ci_tools.build.smoke.expect import Expectations
from ci_tools.catalog.model import Kind
from ci_tools.catalog.nameparse import ParsedName, parse_name

HARDWARE_CHECKS = frozenset({*GPU_CHECKS, MPS_CHECK})
STATIC_CHECKS = frozenset({SASS, ISA_CODE})


class Proof(StrEnum):
    RAN = "ran"
    RAN_CPU = "ran-cpu"
    STATIC = "static"
    UNPROVEN = "unproven"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Proof.UNPROVEN: 0, Proof.STATIC: 1, Proof.RAN_CPU: 2, Proof.RAN: 3}


def required(scope: str, kind: Kind) -> Proof:
    """What the fleet can do for a variant routed to `scope` (never less than static)."""
    if scope == "gpu":
        return Proof.RAN
    if scope == "cpu":
        return Proof.RAN_CPU if kind is Kind.GPU else Proof.RAN
    return Proof.STATIC


@dataclass(frozen=True, kw_only=True)
class Verdict:
    proof: Proof
    failed: tuple[str, ...]  # the failed checks (any failure refuses)
    allowed: bool
    why: str  # why not, when not allowed


def proof_of(record: ResultRecord, expect: Expectations | None) -> Proof:
    """How the record's checks proved its variant, whatever its test.status says; `expect`:
    the catalog's expectations of the variant (None: the catalog does not have it)."""
    parsed = parse_name(record.variant)
    if record.test is None or parsed is None or not record.built:
        return Proof.UNPROVEN
    checks = record.test.checks
    if any(c.status is Status.FAILED for c in checks) or not_as_tested(record, expect):
        return Proof.UNPROVEN
    by_name = {c.name: c.status for c in checks}
    run = [c for c in checks if c.name not in STATIC_CHECKS]
    hardware = [c for c in run if c.name in HARDWARE_CHECKS]
    cpu = [c for c in run if c not in hardware]
    cpu_ran = bool(cpu) and all(c.status is Status.PASSED for c in cpu)
    hardware_ran = bool(hardware) and all(c.status is Status.PASSED for c in hardware)
    sass = by_name.get(SASS) is Status.STATIC
    isa = by_name.get(ISA_CODE) is Status.STATIC
    if parsed.kind is Kind.DARWIN:
        return Proof.RAN if cpu_ran and hardware_ran else Proof.UNPROVEN
    if parsed.kind is Kind.CPU:
        if cpu_ran:
            return Proof.RAN
        return Proof.STATIC if isa else Proof.UNPROVEN
    if cpu_ran and hardware_ran:
        return Proof.RAN
    if cpu_ran and sass:
        return Proof.RAN_CPU
    return Proof.STATIC if sass and isa else Proof.UNPROVEN


def not_as_tested(record: ResultRecord, expect: Expectations | None) -> str:
    """Why the record's checks are not those `ci-tools test` produces for its variant ("" when
    they are): the checks of a run (`check_names`), or of a static leg (the same and
    `isa-code`), each once, `static` only where a check has a static form and its evidence."""
    if expect is None:
        return f"{record.variant} is not a variant of branch {record.branch} in the catalog"
    if expect.variant != record.variant:
        return f"the record is of {record.variant}, not {expect.variant}"
    listed = [c.name for c in record.test.checks] if record.test is not None else []
    expected = check_names(expect)
    allowed = {*expected, *([ISA_CODE] if expect.isa is not None else [])}
    twice = sorted({n for n in listed if listed.count(n) > 1})
    unknown = sorted(set(listed) - allowed)
    missing = [n for n in expected if n not in listed]
    for problem, names in (
        ("listed twice", twice),
        ("not a check `ci-tools test` makes for it", unknown),
        ("missing", missing),
    ):
        if names:
            return f"checks {problem}: {', '.join(names)}"
    for check in record.test.checks if record.test is not None else ():
        if check.status is Status.STATIC:
            why = _static_refused(record, check, expect)
            if why:
                return f"{check.name} is static, but {why}"
    return ""


def _static_refused(record: ResultRecord, check: Check, expect: Expectations) -> str | None:
    if record.schema < 2:
        return f"a schema-{record.schema} record predates static proofs"
    if check.name == SASS and expect.arch is not None:
        return evidence.sass_proves(check.detail, expect.arch)
    if check.name == ISA_CODE and expect.isa is not None:
        flags = evidence.proven_flags(expect.platform, expect.cpuinfo)
        return evidence.isa_proves(check.detail, expect.isa, flags)
    return "it has no static form"


def judge(record: ResultRecord | None, scope: str, expect: Expectations | None) -> Verdict:
    """May `record`'s variant be published (or marked green), the fleet being able to do
    `scope` for it? `expect`: the catalog's expectations of the variant (None: not in it)."""
    if record is None:
        return Verdict(proof=Proof.UNPROVEN, failed=(), allowed=False, why="no result record")
    parsed = parse_name(record.variant)
    kind = parsed.kind if parsed is not None else Kind.CPU
    proof = proof_of(record, expect)
    failed = tuple(
        c.name for c in (record.test.checks if record.test else ()) if c.status is Status.FAILED
    )
    why = _refusal(record, proof, failed, required(scope, kind), expect)
    return Verdict(proof=proof, failed=failed, allowed=why == "", why=why)


def publishable(record: ResultRecord, expect: Expectations | None) -> bool:
    """What the policy says of the record by the route it was tested on (for reports and the
    page; publish and mark-green judge by the route runners.yaml gives now)."""
    route = record.test.route if record.test is not None else None
    return judge(record, route.scope if route is not None else "static", expect).allowed


def _refusal(
    record: ResultRecord,
    proof: Proof,
    failed: Sequence[str],
    need: Proof,
    expect: Expectations | None,
) -> str:
    if record.build is None:
        return "not built"
    if not record.built:
        return "build failed"
    if record.test is None:
        return "not tested"
    if failed:
        return "test failed: " + ", ".join(failed)
    mismatch = not_as_tested(record, expect)
    if mismatch:
        return f"unproven: not the checks `ci-tools test` records for it ({mismatch})"
    if proof is Proof.UNPROVEN:
        shown = record.test.status.value
        return f"unproven: no check ran and no static proof held (test.status says {shown})"
    if proof.rank < need.rank:
        route = record.test.route
        return (
            f"proven only {proof.value}, but the fleet can do {need.value}"
            + (f" ({route.reason})" if route and route.reason else "")
            + ": test it on the runner the matrix routes it to"
        )
    return ""


def describe(record: ResultRecord, expect: Expectations | None) -> str:
    """How the variant was proven, for people: "ran on sm90 (gpu-sm90-1)", "static: SASS
    sm_100 only, avx512bf16 code; no x86_64-linux test runner has an sm100 GPU"."""
    proof = proof_of(record, expect)
    parsed = parse_name(record.variant)
    test = record.test
    if test is None or parsed is None:
        return "not tested"
    runner = f" ({test.runner})" if test.runner else ""
    reason = f"; {test.route.reason}" if test.route and test.route.reason else ""
    if proof is Proof.RAN:
        where = parsed.sm if parsed.kind is Kind.GPU else _cpu_words(parsed)
        return f"ran on {where}{runner}"
    if proof is Proof.RAN_CPU:
        return f"ran on {_cpu_words(parsed)}{runner}; static: {_static_words(test.checks, parsed)}{reason}"
    if proof is Proof.STATIC:
        return f"static: {_static_words(test.checks, parsed)}{reason}"
    failed = [c.name for c in test.checks if c.status is Status.FAILED]
    if failed:
        return "failed: " + ", ".join(failed)
    mismatch = not_as_tested(record, expect)
    return f"unproven: {mismatch}" if mismatch else f"unproven{reason}"


def _cpu_words(parsed: ParsedName) -> str:
    return "Apple silicon (MPS)" if parsed.kind is Kind.DARWIN else f"an {parsed.isa} CPU"


def _static_words(checks: Iterable[Check], parsed: ParsedName) -> str:
    done = {c.name for c in checks if c.status is Status.STATIC}
    words = []
    if SASS in done and parsed.sm is not None:
        words.append(f"SASS sm_{parsed.sm.removeprefix('sm')} only")
    if ISA_CODE in done:
        words.append(f"{parsed.isa} code, nothing above it")
    return ", ".join(words) or "none"
