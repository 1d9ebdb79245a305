"""What a targeted build saves against a reference build, from their two result records.

    python benchmarks/bench_compare.py RECORD_A RECORD_B

RECORD_A is the build under study (e.g. `pytorch-python313-cuda13_0-sm90-avx512`, one SM),
RECORD_B the reference (e.g. a fat build of the same torch for every SM). For each figure both
records hold — closure size, each libtorch library's size and their total, the torch package
(site-packages/torch), the median wall time of `import torch`, the build time — it prints both
values and A/B: 0.35 means A is 65% smaller or faster. A targeted build is meant to be much
smaller and to start faster; this is where that is measured, never asserted. Exit 2 for an unreadable or malformed record (the
schema-checked loader names the file and the field), else 0.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base.errors import EXIT_BAD_INPUT, CiToolsError
from ci_tools.build import results
from ci_tools.build.report import format_bytes
from ci_tools.build.results import ResultRecord


@dataclass(frozen=True, kw_only=True)
class Row:
    figure: str
    a: float | None
    b: float | None
    unit: str  # "bytes" or "s"

    @property
    def ratio(self) -> float | None:
        if self.a is None or self.b is None or self.b == 0:
            return None
        return self.a / self.b


def figures(record: ResultRecord) -> dict[str, tuple[float, str]]:
    out: dict[str, tuple[float, str]] = {}
    build = record.build
    if build is not None and build.closure_bytes is not None:
        out["closure"] = (float(build.closure_bytes), "bytes")
    test_figures = record.test.figures if record.test is not None else None
    if test_figures is not None:
        for lib in test_figures.libraries:
            out[lib.name] = (float(lib.bytes), "bytes")
        total = test_figures.library_bytes
        if total is not None:
            out["libtorch total"] = (float(total), "bytes")
        if test_figures.package_bytes is not None:
            out["torch package"] = (float(test_figures.package_bytes), "bytes")
        if test_figures.import_seconds is not None:
            out["import torch"] = (test_figures.import_seconds, "s")
    if build is not None and build.status is results.Status.PASSED:
        out["build time"] = (build.seconds, "s")
    return out


def compare(a: ResultRecord, b: ResultRecord) -> list[Row]:
    fa, fb = figures(a), figures(b)
    names = list(dict.fromkeys([*fa, *fb]))
    return [
        Row(
            figure=name,
            a=fa[name][0] if name in fa else None,
            b=fb[name][0] if name in fb else None,
            unit=(fa.get(name) or fb[name])[1],
        )
        for name in names
    ]


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return format_bytes(int(value)) if unit == "bytes" else f"{value:.3f} s"


def table(a: ResultRecord, b: ResultRecord) -> str:
    rows = compare(a, b)
    width = max([len("figure"), *(len(r.figure) for r in rows)])
    lines = [
        f"A: {a.variant} ({a.branch}, {a.runner or 'unknown runner'})",
        f"B: {b.variant} ({b.branch}, {b.runner or 'unknown runner'})",
        "",
        f"{'figure':<{width}}  {'A':>12}  {'B':>12}  {'A/B':>6}  change",
    ]
    for row in rows:
        ratio = row.ratio
        shown = f"{ratio:.3f}" if ratio is not None else "-"
        change = f"{(ratio - 1) * 100:+.1f}%" if ratio is not None else "-"
        lines.append(
            f"{row.figure:<{width}}  {_value(row.a, row.unit):>12}  "
            f"{_value(row.b, row.unit):>12}  {shown:>6}  {change}"
        )
    if not rows:
        lines.append("(neither record holds a figure: run `ci-tools test` with --result-json)")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: bench_compare.py RECORD_A RECORD_B", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        a, b = (results.load(Path(arg)) for arg in argv)
    except CiToolsError as exc:
        print(f"bench_compare: {exc}", file=sys.stderr)
        return exc.exit_code
    sys.stdout.write(table(a, b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
