"""The release notes' figures of a variant as table cells: its CUDA libraries' sizes and torch's
import time (from the test leg's record), sizes in binary units."""

from __future__ import annotations

from ci_tools.base import markup
from ci_tools.build.results import ResultRecord


def libraries(record: ResultRecord | None) -> str:
    """Each library as `cuda 1.2 GiB`, joined with +; empty without figures."""
    figures = record.test.figures if record and record.test else None
    if figures is None:
        return ""
    return " + ".join(
        f"{markup.text(lib.name.removeprefix('libtorch_').removesuffix('.so'))} {size(lib.bytes)}"
        for lib in figures.libraries
    )


def import_time(record: ResultRecord | None) -> str:
    figures = record.test.figures if record and record.test else None
    if figures is None or figures.import_seconds is None:
        return ""
    return f"{figures.import_seconds:.2f} s"


def size(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
