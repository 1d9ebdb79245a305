"""`ci-tools page`: the variant selector page, one HTML file, from the catalog and (when given)
the release result records."""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from ci_tools.base.errors import InputError
from ci_tools.base.fsutil import atomic_write_text
from ci_tools.build import results
from ci_tools.catalog import named
from ci_tools.commands import _common
from ci_tools.host.answer import ORG_PLACEHOLDER
from ci_tools.page import site

PAGE = "index.html"


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help=f"where {PAGE} is written"
    )
    parser.add_argument(
        "--branch",
        action="append",
        default=[],
        metavar="B",
        type=_common.branch_name,
        help="a branch to show; repeat for several (default: every branch of the catalog)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="result records (*.result.json, at any depth): sizes, how each variant was "
        "proven, the org it went to, the date",
    )
    parser.add_argument(
        "--org",
        type=_common.org_name,
        help="the Flox organisation of the install lines (default: the catalog's)",
    )


def run(args: argparse.Namespace) -> int:
    catalog = site.only(_common.load(args), args.branch)
    org = args.org or catalog.org
    if org is None:
        raise InputError(
            f"{catalog.display_name} names no `org` for the install lines: set `org:` in "
            f"{named.settings_file(catalog)} "
            f"or pass --org (the page will not print {ORG_PLACEHOLDER})"
        )
    records = results.load_dir(args.results) if args.results is not None else []
    if args.out.exists() and not args.out.is_dir():
        raise InputError(f"--out {args.out}: not a folder")
    generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    text = site.make(catalog, org, records, generated)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / PAGE, text)
    (args.out / PAGE).chmod(0o644)  # a web page: readable by whoever serves it
    print(
        f"page: {args.out / PAGE} ({len(text.encode('utf-8')) // 1024} KiB, {len(catalog.branches)} branches)"
    )
    return 0
