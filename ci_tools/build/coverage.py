"""Proof coverage, the headline of a report and a release: per SM and per CPU ISA, how many
variants ran on matching hardware, were proven statically only, or are unproven. Pure.

An SM's coverage counts its GPU variants: `ran` when their checks ran on a GPU of that SM,
`static` when its code was proven by SASS alone (their CPU checks may have run). An ISA's
counts every Linux variant of it, GPU ones included: `ran` when the checks ran on a CPU with
the ISA, `static` when only objdump proved its code. Apple's MPS builds count under `mps`.
A planned variant with no record is unproven.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ci_tools.build.policy import Proof, proof_of
from ci_tools.build.results import ResultRecord
from ci_tools.build.smoke.expect import ExpectOf
from ci_tools.catalog.model import Kind
from ci_tools.catalog.nameparse import parse_name

RAN, STATIC, UNPROVEN = "ran", "static", "unproven"
COLUMNS = (RAN, STATIC, UNPROVEN)


@dataclass(frozen=True, kw_only=True)
class Coverage:
    by_sm: dict[str, dict[str, int]] = field(default_factory=dict)
    by_isa: dict[str, dict[str, int]] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0))

    def headline(self) -> str:
        count = sum(self.total.values())
        return (
            f"Proof coverage of {count} variants: {self.total[RAN]} ran on matching hardware, "
            f"{self.total[STATIC]} proven statically only, {self.total[UNPROVEN]} unproven"
        )

    def as_json(self) -> dict[str, object]:
        return {"total": self.total, "sm": self.by_sm, "isa": self.by_isa}


def _sm_column(proof: Proof) -> str:
    if proof is Proof.RAN:
        return RAN
    return STATIC if proof in (Proof.RAN_CPU, Proof.STATIC) else UNPROVEN


def _isa_column(proof: Proof) -> str:
    if proof in (Proof.RAN, Proof.RAN_CPU):
        return RAN
    return STATIC if proof is Proof.STATIC else UNPROVEN


def _add(table: dict[str, dict[str, int]], key: str, column: str) -> None:
    table.setdefault(key, dict.fromkeys(COLUMNS, 0))[column] += 1


def coverage(
    records: Iterable[ResultRecord], expect_of: ExpectOf, missing: Iterable[str] = ()
) -> Coverage:
    """`missing`: names of planned variants that have no record; `expect_of`: the catalog's
    expectations of a record's variant, which the policy judges its checks against."""
    result = Coverage()
    proofs = [(r.variant, proof_of(r, expect_of(r))) for r in records]
    proofs += [(name, Proof.UNPROVEN) for name in missing]
    for name, proof in proofs:
        parsed = parse_name(name)
        if parsed is None:
            result.total[UNPROVEN] += 1
            continue
        isa_column = _isa_column(proof)
        if parsed.kind is Kind.GPU and parsed.sm is not None:
            _add(result.by_sm, parsed.sm, _sm_column(proof))
            # The headline counts a GPU variant as its SM's proof says.
            result.total[_sm_column(proof)] += 1
        else:
            result.total[isa_column] += 1
        _add(result.by_isa, parsed.isa or "mps", isa_column)
    return result


def _order(key: str) -> tuple[int, str]:
    digits = "".join(ch for ch in key if ch.isdigit())
    return (int(digits) if key.startswith("sm") and digits else 0, key)


def markdown(cover: Coverage) -> list[str]:
    """The coverage as Markdown lines: the headline, then one table per SM and per ISA."""
    lines = [f"**{cover.headline()}**", ""]
    for title, table in (("SM", cover.by_sm), ("CPU ISA", cover.by_isa)):
        if not table:
            continue
        lines += [f"| {title} | ran | static only | unproven |", "|---|---|---|---|"]
        for key in sorted(table, key=_order):
            counts = table[key]
            lines.append(f"| {key} | {counts[RAN]} | {counts[STATIC]} | {counts[UNPROVEN]} |")
        lines.append("")
    return lines
