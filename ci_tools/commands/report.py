"""`ci-tools report DIR`: merge a folder of result records into one table and one summary.

Exit 1 when any variant failed (a build that failed or never finished, a failed check or
publish, a planned variant without a record), after both are written; 0 when none did.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ci_tools.base.errors import EXIT_FAILED, EXIT_OK
from ci_tools.base.fsutil import atomic_write_text
from ci_tools.build import report
from ci_tools.build.smoke.expect import ExpectOf, from_catalog
from ci_tools.catalog import layout
from ci_tools.commands import _common


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", type=Path, metavar="DIR", help="folder of *.result.json (searched recursively)"
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="PATH",
        help="write the Markdown table to PATH (appended when PATH is $GITHUB_STEP_SUMMARY); "
        "default: standard output",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON summary to PATH")
    parser.add_argument(
        "--planned",
        type=Path,
        metavar="FILE",
        help="the variants the run planned: the JSON `ci-tools matrix` printed, or one name a "
        "line; a planned variant with no record counts as a failed build",
    )
    # The publish policy judges each record against the checks `ci-tools test` makes for its
    # variant, which the catalog says.
    _common.add_catalog_option(parser)


def _is_step_summary(path: Path) -> bool:
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    return Path(target).resolve() == path.resolve()


def _expectations(args: argparse.Namespace) -> ExpectOf:
    """The catalog's expectations of each record's variant; outside a build repository (no
    catalog, no recipes, no --catalog) none, and every record shows unproven, saying why."""
    cwd = Path.cwd()
    if (
        args.catalog is None
        and not _common.catalog_path(args).is_file()
        and not (cwd / layout.PKGS_DIR).is_dir()
    ):
        print(
            f"ci-tools: report: no {layout.CATALOG} or {layout.PKGS_DIR}/ here: no record can be "
            "judged proven (pass --catalog PATH)",
            file=sys.stderr,
        )
        return lambda record: None
    return from_catalog(_common.load(args))


def run(args: argparse.Namespace) -> int:
    planned = report.load_planned(args.planned) if args.planned is not None else []
    records = report.load_records(args.directory, allow_empty=bool(planned))
    expect_of = _expectations(args)
    text = report.markdown(records, expect_of, planned)
    if args.markdown is None:
        sys.stdout.write(text)
    elif _is_step_summary(args.markdown):
        # GitHub collects the whole job's summary from this one file: add, never replace.
        with args.markdown.open("a", encoding="utf-8") as handle:
            handle.write(text)
    else:
        atomic_write_text(args.markdown, text)
    summary = report.summary(records, expect_of, planned)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(summary, indent=2) + "\n")
    failed: int = summary["counts"]["failed"]
    if failed:
        print(f"ci-tools: report: {failed} variant(s) failed", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
