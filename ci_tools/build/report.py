"""A folder of result records -> one Markdown table (for $GITHUB_STEP_SUMMARY) and one JSON
summary, headed by the proof coverage per SM and per ISA (`coverage`), with each variant's
proof as the publish policy reads it. Everything but `load_records` and `load_planned` is pure.

Given the plan (the variants the run was meant to build), a planned variant with no record
counts as failed: a job that was cancelled or timed out before writing anything must not
look like a variant nobody asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ci_tools.base import markup, matrix_file
from ci_tools.base.errors import InputError
from ci_tools.build import coverage, policy, results
from ci_tools.build.results import CacheStatus, PublishStatus, ResultRecord, Status
from ci_tools.build.smoke.expect import Expectations, ExpectOf

SUMMARY_SCHEMA = 2

_ICONS = {
    Status.PASSED: "✅",
    Status.FAILED: "❌",
    Status.SKIPPED: "⏭️",
    Status.STARTED: "⏳",
    Status.STATIC: "🔎",
    PublishStatus.PUBLISHED: "✅",
    PublishStatus.FAILED: "❌",
    PublishStatus.DRY_RUN: "🔍",
}
_NONE = "—"


def load_records(directory: Path, *, allow_empty: bool = False) -> list[ResultRecord]:
    """Every record under `directory`, at any depth (artifact downloads nest a folder each).

    Two records of one variant and branch are refused: which of them is true is a question
    for a person, not for a summary. `allow_empty`: with a plan, no folder or no record is an
    answer (every planned variant is missing), not a mistake.
    """
    if not directory.is_dir():
        if allow_empty and not directory.exists():
            return []
        raise InputError(f"{directory}: no such results folder")
    paths = sorted(directory.rglob(f"*{results.RESULT_SUFFIX}"))
    if not paths and allow_empty:
        return []
    if not paths:
        raise InputError(
            f"{directory}: holds no result records (*{results.RESULT_SUFFIX}); "
            "run `ci-tools build` / `ci-tools test` with --results DIR first"
        )
    seen: dict[tuple[str, str], Path] = {}
    records = []
    for path in paths:
        record = results.load(path)
        key = (record.branch, record.variant)
        if key in seen:
            raise InputError(
                f"{path}: a second record of {record.variant} on branch {record.branch} "
                f"(the first is {seen[key]}); remove the stale one"
            )
        seen[key] = path
        records.append(record)
    return records


@dataclass(frozen=True, kw_only=True, order=True)
class Planned:
    """A variant the run planned to build; branch None matches the variant on any branch."""

    variant: str
    branch: str | None = None


_PLANNED_NAME = matrix_file.VARIANT_NAME
MAX_PLANNED_BYTES = matrix_file.MAX_BYTES


def load_planned(path: Path) -> list[Planned]:
    """`--planned FILE`: read (a regular file, bounded in size) and parsed."""
    return parse_planned(matrix_file.read_text(path, "--planned"), str(path))


def parse_planned(text: str, source: str) -> list[Planned]:
    """The plan: the JSON `ci-tools matrix` prints ({"include": [{"branch", "packages"}]}),
    or one variant name a line (`#` starts a comment). InputError names source:line."""
    if text.lstrip().startswith("{"):
        return [
            Planned(variant=name, branch=entry.branch)
            for entry in matrix_file.parse(text, source)
            for name in entry.packages
        ]
    planned = []
    for number, line in enumerate(text.splitlines(), start=1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not _PLANNED_NAME.fullmatch(name):
            raise InputError(f"{source}:{number}: {name!r} is not a variant name")
        planned.append(Planned(variant=name))
    return planned


def missing(records: Iterable[ResultRecord], planned: Iterable[Planned]) -> list[Planned]:
    """The planned variants no record answers for, each once, in order."""
    have = [(r.branch, r.variant) for r in records]
    out: list[Planned] = []
    for plan in planned:
        found = any(
            variant == plan.variant and (plan.branch is None or branch == plan.branch)
            for branch, variant in have
        )
        if not found and plan not in out:
            out.append(plan)
    return sorted(out, key=lambda p: (p.branch or "", p.variant))


def format_bytes(size: int) -> str:
    if size >= 1 << 30:
        return f"{size / (1 << 30):.2f} GiB"
    return f"{size / (1 << 20):.1f} MiB"


def format_minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def failed_checks(record: ResultRecord) -> list[str]:
    if record.test is None:
        return []
    return [c.name for c in record.test.checks if c.status is Status.FAILED]


def _ordered(records: Iterable[ResultRecord]) -> list[ResultRecord]:
    return sorted(records, key=lambda r: (r.branch, r.variant))


def _count(values: Iterable[str | None], keys: Sequence[str]) -> dict[str, int]:
    counts = dict.fromkeys([*keys, "none"], 0)
    for value in values:
        counts[value if value is not None else "none"] += 1
    return counts


def summary(
    records: Iterable[ResultRecord], expect_of: ExpectOf, planned: Iterable[Planned] = ()
) -> dict[str, Any]:
    """The JSON summary: counts, then one row per variant, then the planned variants with no
    record (each counted as a failed build). `expect_of`: the catalog's expectations of a
    record's variant, which the publish policy judges its checks against."""
    ordered = _ordered(records)
    absent = missing(ordered, planned)
    build_statuses = [s.value for s in Status if s is not Status.STATIC]
    check_statuses = [s.value for s in results.CHECK_STATUSES]
    build = _count((r.build.status.value if r.build else None for r in ordered), build_statuses)
    build["missing"] = len(absent)
    return {
        "schema": SUMMARY_SCHEMA,
        "counts": {
            "variants": len(ordered) + len(absent),
            "build": build,
            "test": _count(
                (r.test.status.value if r.test else None for r in ordered), check_statuses
            ),
            "publish": _count(
                (r.publish.status.value if r.publish else None for r in ordered),
                [s.value for s in PublishStatus],
            ),
            "publishable": sum(policy.publishable(r, expect_of(r)) for r in ordered),
            "failed": failed_count(ordered, absent),
        },
        "coverage": coverage.coverage(ordered, expect_of, (p.variant for p in absent)).as_json(),
        "rows": [_row(r, expect_of(r)) for r in ordered],
        "missing": [{"variant": p.variant, "branch": p.branch} for p in absent],
    }


def build_failed(record: ResultRecord) -> bool:
    """Failed, or started and never finished (the job died under it)."""
    return record.build is not None and record.build.status in (Status.FAILED, Status.STARTED)


def failed_count(records: Sequence[ResultRecord], absent: Sequence[Planned]) -> int:
    """Variants that failed anywhere: a build that failed or never finished, a failed check,
    a failed publish, or a planned variant with no record."""
    failed = 0
    for record in records:
        failed += (
            build_failed(record)
            or (record.test is not None and record.test.status is Status.FAILED)
            or (record.publish is not None and record.publish.status is PublishStatus.FAILED)
        )
    return failed + len(absent)


def _row(record: ResultRecord, expect: Expectations | None) -> dict[str, Any]:
    build, test, publish = record.build, record.test, record.publish
    return {
        "variant": record.variant,
        "package": record.package,
        "branch": record.branch,
        "platform": record.platform,
        "commit": record.commit,
        "runner": record.runner,
        "build": build.status.value if build else None,
        "build_seconds": build.seconds if build else None,
        "build_attempts": build.attempts if build else None,
        "store_path": build.store_path if build else None,
        "closure_bytes": build.closure_bytes if build else None,
        "test": test.status.value if test else None,
        "failed_checks": failed_checks(record),
        "libraries": (
            {lib.name: lib.bytes for lib in test.figures.libraries}
            if test and test.figures
            else None
        ),
        "import_seconds": test.figures.import_seconds if test and test.figures else None,
        "sizes": asdict(record.sizes),
        "proof": policy.proof_of(record, expect).value,
        "proven": policy.describe(record, expect),
        "publish": publish.status.value if publish else None,
        "publishable": policy.publishable(record, expect),
    }


def markdown(
    records: Iterable[ResultRecord], expect_of: ExpectOf, planned: Iterable[Planned] = ()
) -> str:
    """One table for $GITHUB_STEP_SUMMARY, with a line of counts above it. Every text a
    record holds is `markup.text`: it shows, it does not render."""
    ordered = _ordered(records)
    absent = missing(ordered, planned)
    data = summary(ordered, expect_of, absent)["counts"]
    build = data["build"]
    branches = ", ".join(
        markup.text(b)
        for b in sorted({r.branch for r in ordered} | {p.branch for p in absent if p.branch})
    )
    commits = ", ".join(sorted({markup.text(r.commit[:12]) for r in ordered if r.commit}))
    not_built = build["failed"] + build["started"] + build["missing"]
    unfinished = []
    if build["started"]:
        unfinished.append(f"{build['started']} never finished")
    if build["missing"]:
        unfinished.append(f"{build['missing']} planned with no record")
    cover = coverage.coverage(ordered, expect_of, (p.variant for p in absent))
    lines = [
        "## Build results",
        "",
        *coverage.markdown(cover),
        f"Branch {branches}" + (f" · commit {commits}" if commits else "") + " · "
        f"{data['variants']} variants: "
        f"{build['passed']} built, {not_built} failed to build"
        + (f" ({', '.join(unfinished)})" if unfinished else "")
        + ", "
        f"{data['test']['passed']} ran their checks, {data['test']['static']} proven "
        f"statically, {data['test']['failed']} failed a check, "
        f"{data['publishable']} ready to publish",
        "",
        "| Variant | Platform | Build | Closure | Test | Proof | libtorch | import torch | Publish |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    several = len({r.branch for r in ordered} | {p.branch for p in absent if p.branch}) > 1
    rows = [
        (r.branch, r.variant, _table_row(r, expect_of(r), with_branch=several)) for r in ordered
    ]
    rows += [(p.branch or "", p.variant, _missing_row(p, with_branch=several)) for p in absent]
    lines.extend(row for _, _, row in sorted(rows))
    return "\n".join(lines) + "\n"


def _missing_row(plan: Planned, *, with_branch: bool) -> str:
    branch = f" ({markup.text(plan.branch)})" if with_branch and plan.branch else ""
    name = f"`{plan.variant}`{branch}"
    cells = [name, _NONE, "❌ missing: planned, no record", _NONE, _NONE, "unproven", _NONE]
    cells += [_NONE, _NONE]
    return "| " + " | ".join(cells) + " |"


def format_libraries(record: ResultRecord) -> str:
    """`cuda 1.10 GiB + cpu 414.1 MiB`: each libtorch library by its short name."""
    figures = record.test.figures if record.test is not None else None
    if figures is None or not figures.libraries:
        return _NONE
    parts = []
    for lib in figures.libraries:
        short = lib.name.removeprefix("libtorch_").removesuffix(".so")
        parts.append(f"{markup.text(short)} {format_bytes(lib.bytes)}")
    return " + ".join(parts)


def format_import(record: ResultRecord) -> str:
    figures = record.test.figures if record.test is not None else None
    if figures is None or figures.import_seconds is None:
        return _NONE
    return f"{figures.import_seconds:.2f} s"


def _table_row(record: ResultRecord, expect: Expectations | None, *, with_branch: bool) -> str:
    build = _NONE
    closure = _NONE
    if record.build is not None:
        build = f"{_ICONS[record.build.status]} {record.build.status}"
        if record.build.status is Status.STARTED:
            build += " (never finished)"
        elif record.build.status is not Status.SKIPPED:
            build += f" ({format_minutes(record.build.seconds)})"
        if record.build.attempts > 1:
            build += f", {record.build.attempts} attempts"
        if record.build.cache is not None and record.build.cache.status is not CacheStatus.PUSHED:
            build += ", not pushed to the cache"
        if record.build.closure_bytes is not None:
            closure = format_bytes(record.build.closure_bytes)
    test = _NONE
    if record.test is not None:
        test = f"{_ICONS[record.test.status]} {record.test.status}"
        failed = failed_checks(record)
        if failed:
            test += ": " + ", ".join(markup.text(name) for name in failed)
    publish = _NONE
    if record.publish is not None:
        org = markup.text(record.publish.org)
        publish = f"{_ICONS[record.publish.status]} {record.publish.status} ({org})"
    name = f"`{record.variant}`" + (f" ({markup.text(record.branch)})" if with_branch else "")
    cells = [
        name,
        markup.text(record.platform),
        build,
        closure,
        test,
        markup.text(policy.describe(record, expect)),
        format_libraries(record),
        format_import(record),
        publish,
    ]
    return "| " + " | ".join(cells) + " |"
