"""`ci-tools release --branch B --results DIR [--org ORG] [--dry-run]`, and
`ci-tools release --branch B --org ORG --list-published`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tools.base.retry import RetryPolicy
from ci_tools.commands import _common, _fleet

if TYPE_CHECKING:
    from github.GitRelease import GitRelease

    from ci_tools.base import github_api
    from ci_tools.build.results import ResultRecord
    from ci_tools.catalog.model import Branch
    from ci_tools.catalog.variants import Variant
    from ci_tools.ship.release import Notes

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
    _fleet.add_runners_option(parser)


def run(args: argparse.Namespace) -> int:
    from ci_tools.base import github_api
    from ci_tools.catalog import variants
    from ci_tools.ship import release

    _check_options(args)
    catalog = _common.load(args)
    branch = catalog.branch(args.branch)
    settings = github_api.settings_from_env(os.environ)
    commit = release.validate_commit(os.environ.get("GITHUB_SHA") or _head_commit())
    branch_variants = tuple(variants.expand(catalog, branch.name))
    if args.list_published:
        names = [v.name for v in branch_variants]
        for name in _published(settings, branch.name, commit, args.org, names):
            print(name)
        return 0
    records = _run_records(args.results, branch.name, branch_variants)
    target = _Target(
        branch=branch,
        commit=commit,
        variants=branch_variants,
        tag=release.tag_for(branch.name, commit),
    )

    def say(line: str) -> None:
        print(settings.redact(line), flush=True)

    api = github_api.connect(settings, POLICY, say)
    existing = api.find_release(target.tag)
    records = _with_previous_records(api, existing, records, target)
    inventory = _fleet.for_catalog(args, catalog, Path.cwd())
    notes = release.build_notes(
        branch=branch,
        variants=branch_variants,
        records=records,
        commit=commit,
        org=args.org,
        planned=_planned(args.planned, branch.name),
        scopes={v.name: _fleet.route(inventory, v).scope for v in branch_variants},
    )
    body = release.render_notes(notes, release.templates_dir(_common.catalog_path(args)))
    if args.dry_run:
        _say_what_would_change(api, existing, target, notes, body, say)
    else:
        _write_release(api, existing, target, notes, body, records, say)
    return _conclude(notes, branch.name, say)


@dataclass(frozen=True, kw_only=True)
class _Target:
    """The release one run writes: the branch's release of one commit, and its results asset."""

    branch: Branch
    commit: str
    variants: tuple[Variant, ...]  # every variant of the branch
    tag: str

    @property
    def asset(self) -> str:
        from ci_tools.ship import release

        return release.asset_name(self.tag)


def _check_options(args: argparse.Namespace) -> None:
    from ci_tools.base.errors import InputError
    from ci_tools.ship import publish

    if args.org is not None:
        publish.validate_org(args.org)
    if args.list_published and args.org is None:
        raise InputError("--list-published needs --org ORG: a variant is published to one org")
    if not args.list_published and args.results is None:
        raise InputError("--results DIR is required: the folder of the result records")


def _run_records(
    folder: Path, branch: str, branch_variants: Sequence[Variant]
) -> list[ResultRecord]:
    """This run's records, each of a variant of `branch` (bad input, exit 2, before GitHub)."""
    from ci_tools.build import results
    from ci_tools.ship import release

    records = results.load_dir(folder)
    release.check_records(records, branch, (v.name for v in branch_variants))
    return records


def _with_previous_records(
    api: github_api.Api,
    existing: GitRelease | None,
    records: list[ResultRecord],
    target: _Target,
) -> list[ResultRecord]:
    """This run's records plus those the release's asset holds from an earlier run at the same
    commit, for the variants this run did not build."""
    from ci_tools.ship import release

    if existing is None:
        return records
    previous = _previous_asset(api, existing, target.asset)
    if previous is None:
        return records
    merged = release.merge_previous(
        previous, records, commit=target.commit, source=f"release {target.tag} asset {target.asset}"
    )
    release.check_records(merged, target.branch.name, (v.name for v in target.variants))
    return merged


def _say_what_would_change(
    api: github_api.Api,
    existing: GitRelease | None,
    target: _Target,
    notes: Notes,
    body: str,
    say: Callable[[str], None],
) -> None:
    if existing is None:
        say(f"would create release {notes.tag} ({notes.name}) at {target.commit}")
        say(f"would upload asset {target.asset}")
    else:
        draft = " (a draft, kept as draft)" if existing.draft else ""
        say(f"would update release {notes.tag}{draft}: {existing.html_url}")
        replaced = api.existing_asset(existing, target.asset)
        say(f"would {'replace' if replaced else 'upload'} asset {target.asset}")
    say("release notes:")
    sys.stdout.write(body)


def _write_release(
    api: github_api.Api,
    existing: GitRelease | None,
    target: _Target,
    notes: Notes,
    body: str,
    records: Sequence[ResultRecord],
    say: Callable[[str], None],
) -> None:
    from ci_tools.ship import release

    data = (json.dumps(release.summary(notes, records), indent=2) + "\n").encode()
    if existing is None:
        # Only the default branch's release is "latest": the CUDA branches sit beside it.
        made = api.create_release(
            tag=notes.tag,
            name=notes.name,
            body=body,
            commit=target.commit,
            latest=target.branch.name == "main",
        )
        say(f"created release {notes.tag}: {made.html_url}")
    else:
        made = api.update_release(existing, name=notes.name, body=body, commit=target.commit)
        state = " (kept as draft)" if made.draft else ""
        say(f"updated release {notes.tag}{state}: {made.html_url}")
    api.replace_asset(made, name=target.asset, data=data)
    say(f"attached {target.asset}")


def _conclude(notes: Notes, branch: str, say: Callable[[str], None]) -> int:
    """The count of each outcome; FailedError (exit 1) naming every variant that failed."""
    from ci_tools.base.errors import FailedError

    counts = ", ".join(f"{n} {o}" for o, n in sorted(notes.counts.items()))
    say(f"variants of {branch}: {counts}")
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
