"""A folder of result records -> one Markdown table (for $GITHUB_STEP_SUMMARY) and one JSON
summary. Everything but `load_records` is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ci_tools import results
from ci_tools.errors import InputError
from ci_tools.results import PublishStatus, ResultRecord, Status

SUMMARY_SCHEMA = 1

_ICONS = {
    Status.PASSED: "✅",
    Status.FAILED: "❌",
    Status.SKIPPED: "⏭️",
    PublishStatus.PUBLISHED: "✅",
    PublishStatus.FAILED: "❌",
    PublishStatus.DRY_RUN: "🔍",
}
_NONE = "—"


def load_records(directory: Path) -> list[ResultRecord]:
    """Every record under `directory`, at any depth (artifact downloads nest a folder each).

    Two records of one variant and branch are refused: which of them is true is a question
    for a person, not for a summary.
    """
    if not directory.is_dir():
        raise InputError(f"{directory}: no such results folder")
    paths = sorted(directory.rglob(f"*{results.RESULT_SUFFIX}"))
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


def summary(records: Iterable[ResultRecord]) -> dict[str, Any]:
    """The JSON summary: counts, then one row per variant."""
    ordered = _ordered(records)
    statuses = [s.value for s in Status]
    return {
        "schema": SUMMARY_SCHEMA,
        "counts": {
            "variants": len(ordered),
            "build": _count((r.build.status.value if r.build else None for r in ordered), statuses),
            "test": _count((r.test.status.value if r.test else None for r in ordered), statuses),
            "publish": _count(
                (r.publish.status.value if r.publish else None for r in ordered),
                [s.value for s in PublishStatus],
            ),
            "passed": sum(r.passed for r in ordered),
        },
        "rows": [_row(r) for r in ordered],
    }


def _row(record: ResultRecord) -> dict[str, Any]:
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
        "publish": publish.status.value if publish else None,
        "passed": record.passed,
    }


def markdown(records: Iterable[ResultRecord]) -> str:
    """One table for $GITHUB_STEP_SUMMARY, with a line of counts above it."""
    ordered = _ordered(records)
    data = summary(ordered)["counts"]
    branches = ", ".join(sorted({r.branch for r in ordered}))
    commits = ", ".join(sorted({r.commit[:12] for r in ordered if r.commit}))
    lines = [
        "## Build results",
        "",
        f"Branch {branches}" + (f" · commit {commits}" if commits else "") + " · "
        f"{data['variants']} variants: "
        f"{data['build']['passed']} built, {data['build']['failed']} failed to build, "
        f"{data['test']['passed']} passed their checks, {data['test']['failed']} failed a check, "
        f"{data['passed']} ready to publish",
        "",
        "| Variant | Platform | Build | Closure | Test | Publish |",
        "|---|---|---|---|---|---|",
    ]
    several = len({r.branch for r in ordered}) > 1
    lines.extend(_table_row(r, with_branch=several) for r in ordered)
    return "\n".join(lines) + "\n"


def _table_row(record: ResultRecord, *, with_branch: bool) -> str:
    build = _NONE
    closure = _NONE
    if record.build is not None:
        build = f"{_ICONS[record.build.status]} {record.build.status}"
        if record.build.status is not Status.SKIPPED:
            build += f" ({format_minutes(record.build.seconds)})"
        if record.build.attempts > 1:
            build += f", {record.build.attempts} attempts"
        if record.build.closure_bytes is not None:
            closure = format_bytes(record.build.closure_bytes)
    test = _NONE
    if record.test is not None:
        test = f"{_ICONS[record.test.status]} {record.test.status}"
        failed = failed_checks(record)
        if failed:
            test += ": " + ", ".join(failed)
    publish = _NONE
    if record.publish is not None:
        publish = f"{_ICONS[record.publish.status]} {record.publish.status} ({record.publish.org})"
    name = f"`{record.variant}`" + (f" ({record.branch})" if with_branch else "")
    cells = [name, record.platform, build, closure, test, publish]
    return "| " + " | ".join(cells) + " |"
