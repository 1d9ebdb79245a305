"""`ci-tools release --branch B --results DIR [--org ORG] [--dry-run]`, and
`ci-tools release --branch B --org ORG --list-published`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tools.base.retry import RetryPolicy
from ci_tools.commands import _common

if TYPE_CHECKING:
    from ci_tools.base import github_api

# Bounded in total time so a GitHub outage fails the job instead of hanging it.
POLICY = RetryPolicy(attempts=6, total_seconds=900, initial_seconds=2, max_seconds=120)


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument("--branch", required=True, help="the catalog branch released")
    parser.add_argument(
        "--results", type=Path, metavar="DIR", help="folder of result records (required)"
    )
    parser.add_argument(
        "--list-published",
        action="store_true",
        help="only print, one a line, the variants this commit's release already records as "
        "published to --org (a re-dispatch skips them: FloxHub has their build); changes nothing",
    )
    parser.add_argument(
        "--org",
        default=None,
        help="Flox organisation for the install lines (default: the records')",
    )
    parser.add_argument(
        "--planned",
        type=Path,
        metavar="PATH",
        help="the variants this run planned (the JSON `ci-tools matrix` printed, or one name a "
        "line); a planned variant with no record counts as a failed build",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="read from GitHub only; print what would change"
    )


def run(args: argparse.Namespace) -> int:
    from ci_tools.base import github_api
    from ci_tools.base.errors import FailedError, InputError
    from ci_tools.build import results
    from ci_tools.catalog import variants
    from ci_tools.ship import publish, release

    if args.org is not None:
        publish.validate_org(args.org)
    if args.list_published and args.org is None:
        raise InputError("--list-published needs --org ORG: a variant is published to one org")
    if not args.list_published and args.results is None:
        raise InputError("--results DIR is required: the folder of the result records")
    catalog = _common.load(args)
    branch = catalog.branch(args.branch)
    settings = github_api.settings_from_env(os.environ)

    def say(line: str) -> None:
        print(settings.redact(line), flush=True)

    commit = release.validate_commit(os.environ.get("GITHUB_SHA") or _head_commit())
    branch_variants = variants.expand(catalog, branch.name)
    if args.list_published:
        for name in _published(
            settings, branch.name, commit, args.org, [v.name for v in branch_variants]
        ):
            print(name)
        return 0
    records = results.load_dir(args.results)
    release.check_records(records, branch.name, (v.name for v in branch_variants))
    tag = release.tag_for(branch.name, commit)
    asset = release.asset_name(tag)
    api = github_api.connect(settings, POLICY, say)
    existing = api.find_release(tag)
    if existing is not None:
        previous = _previous_asset(api, existing, asset)
        if previous is not None:
            records = release.merge_previous(
                previous, records, commit=commit, source=f"release {tag} asset {asset}"
            )
            release.check_records(records, branch.name, (v.name for v in branch_variants))
    notes = release.build_notes(
        branch=branch,
        variants=branch_variants,
        records=records,
        commit=commit,
        org=args.org,
        planned=_planned(args.planned, branch.name),
    )
    body = release.render_notes(notes, release.templates_dir(_common.catalog_path(args)))
    data = (json.dumps(release.summary(notes, records), indent=2) + "\n").encode()
    if args.dry_run:
        if existing is None:
            say(f"would create release {notes.tag} ({notes.name}) at {commit}")
            say(f"would upload asset {asset}")
        else:
            draft = " (a draft, kept as draft)" if existing.draft else ""
            say(f"would update release {notes.tag}{draft}: {existing.html_url}")
            replaced = api.existing_asset(existing, asset)
            say(f"would {'replace' if replaced else 'upload'} asset {asset}")
        say("release notes:")
        sys.stdout.write(body)
    else:
        if existing is None:
            # Only the default branch's release is "latest": the CUDA branches sit beside it.
            made = api.create_release(
                tag=notes.tag,
                name=notes.name,
                body=body,
                commit=commit,
                latest=branch.name == "main",
            )
            say(f"created release {notes.tag}: {made.html_url}")
        else:
            made = api.update_release(existing, name=notes.name, body=body, commit=commit)
            state = " (kept as draft)" if made.draft else ""
            say(f"updated release {notes.tag}{state}: {made.html_url}")
        api.replace_asset(made, name=asset, data=data)
        say(f"attached {asset}")
    counts = ", ".join(f"{n} {o}" for o, n in sorted(notes.counts.items()))
    say(f"variants of {branch.name}: {counts}")
    if notes.failed:
        raise FailedError(
            "failed: " + ", ".join(f"{r.variant} ({r.outcome})" for r in notes.failed)
        )
    return 0


def _published(
    settings: github_api.Settings, branch: str, commit: str, org: str, names: Sequence[str]
) -> list[str]:
    """What `--list-published` prints (stdout holds only the names; GitHub's retry notices
    go to stderr); empty where the commit has no release yet."""
    from ci_tools.base import github_api
    from ci_tools.ship import release

    tag = release.tag_for(branch, commit)
    asset = release.asset_name(tag)
    api = github_api.connect(
        settings, POLICY, lambda line: print(settings.redact(line), file=sys.stderr, flush=True)
    )
    existing = api.find_release(tag)
    if existing is None:
        return []
    return release.published_in(
        _previous_asset(api, existing, asset),
        commit=commit,
        org=org,
        source=f"release {tag} asset {asset}",
        names=names,
    )


def _planned(path: Path | None, branch: str) -> list[str]:
    from ci_tools.base.errors import InputError
    from ci_tools.build import report

    if path is None:
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--planned {path}: cannot read it: {exc}") from None
    return [p.variant for p in report.parse_planned(text, str(path)) if p.branch in (None, branch)]


def _previous_asset(api: Any, existing: Any, name: str) -> Any:
    """The JSON of the release's results asset from an earlier run, or None without one."""
    from ci_tools.base.errors import InputError

    for asset in api.call("list assets", lambda: list(existing.get_assets())):
        if asset.name == name:

            def fetch(asset: Any = asset) -> bytes:
                status, _headers, stream = asset.download_asset()
                if status != 200:
                    raise InputError(f"download of asset {name} answered HTTP {status}")
                return b"".join(stream)

            raw = api.call(f"download asset {name}", fetch)
            try:
                return json.loads(raw)
            except ValueError as exc:
                raise InputError(f"asset {name} of release is not JSON: {exc}") from None
    return None


def _head_commit() -> str:
    from ci_tools.base import proc
    from ci_tools.base.errors import InputError

    result = proc.run(["git", "rev-parse", "HEAD"], timeout=60)
    if not result.ok:
        raise InputError("GITHUB_SHA is not set and `git rev-parse HEAD` failed: set GITHUB_SHA")
    return result.stdout.strip()
