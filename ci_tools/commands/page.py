"""`ci-tools page`: the variant selector page, one HTML file, from the catalog and (when given)
the release result records."""

from __future__ import annotations

import argparse
import datetime
import os
from pathlib import Path

from ci_tools.base import ghoutput
from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.fsutil import atomic_write_text
from ci_tools.base.retry import RetryPolicy
from ci_tools.build import results
from ci_tools.build.results import ResultRecord
from ci_tools.catalog import named, variants
from ci_tools.catalog.model import Catalog
from ci_tools.commands import _common
from ci_tools.host.answer import ORG_PLACEHOLDER
from ci_tools.page import site

PAGE = "index.html"
# Reading the releases is worth minutes, not the job: after this the page is built without them.
POLICY = RetryPolicy(attempts=4, total_seconds=300, initial_seconds=2, max_seconds=60)


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
        "--from-releases",
        action="store_true",
        help="also show each branch's published variants from its newest GitHub release (its "
        "results asset, checked against its tag); --results' records win for their variants. "
        "Reads GITHUB_TOKEN (contents: read), GITHUB_REPOSITORY; without them, or without "
        "GitHub, the page is built from --results alone, with a notice",
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
    if args.from_releases:
        records = _with_releases(catalog, org, records)
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


def _with_releases(catalog: Catalog, org: str, records: list[ResultRecord]) -> list[ResultRecord]:
    """`records` plus what each branch's newest release holds as published to `org`. Without
    a token, or without GitHub, only `records`, with a notice: the page is still worth
    deploying, and says which variants it cannot vouch for."""
    from ci_tools.base import github_api
    from ci_tools.ship import released, released_fetch

    env = os.environ
    try:
        settings = github_api.settings_from_env(env)
    except InputError as exc:
        ghoutput.notice(f"--from-releases: {exc}; the page shows --results' records only", env)
        return records

    def say(line: str) -> None:  # GitHub's retries: a log line
        print(settings.redact(line), flush=True)

    def left_out(line: str) -> None:  # what the page lacks: an annotation on the run
        ghoutput.warning(settings.redact(line), env)

    names = {b: [v.name for v in variants.expand(catalog, b)] for b in catalog.branches}
    try:
        api = github_api.connect(settings, POLICY, say)
        shelf = released_fetch.published(api, names, org, left_out)
    except (InputError, FailedError) as exc:
        message = settings.redact(str(exc))
        ghoutput.notice(f"--from-releases: {message}; the page shows --results' records only", env)
        return records
    print(f"page: {len(shelf)} published records from the branches' releases", flush=True)
    return released.merge(records, shelf)
