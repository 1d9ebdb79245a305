"""`ci-tools release --branch B --results DIR [--planned PATH] [--org ORG] [--dry-run]`,
`ci-tools release --branch B --org ORG --list-published`, and
`ci-tools release --branch B --preflight [--dry-run] [--environment NAME]`.

A release means what it says:
* it is made only when something was published (a dry run: would be); otherwise nothing is
  written and the exit is 1, naming why;
* it is the repository's latest release only when it is `main`'s and nothing failed;
* its tag must sit on the planned commit (`ship.target`), else exit 2 and nothing written;
* records of another commit are not this build's: left out, with a notice; a planned
  variant without a record of this commit failed;
* over 100,000 characters the notes summarise and attach the full table (`ship.notes`);
* `--preflight`, run by the plan job before any build, stops a release that could not
  publish (`ship.preflight`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tools.base import redact
from ci_tools.base.retry import RetryPolicy
from ci_tools.commands import _common, _fleet, _provenance, _release_checks, _release_offline

if TYPE_CHECKING:
    from github.GitRelease import GitRelease

    from ci_tools.base import github_api
    from ci_tools.build.results import ResultRecord
    from ci_tools.catalog.model import Branch
    from ci_tools.catalog.variants import Variant
    from ci_tools.ship.notes import Body
    from ci_tools.ship.release import Notes

# Bounded in total time so a GitHub outage fails the job instead of hanging it.
POLICY = RetryPolicy(attempts=6, total_seconds=900, initial_seconds=2, max_seconds=120)


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    parser.add_argument(
        "--branch", required=True, metavar="B", type=_common.branch_name, help="the branch released"
    )
    parser.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="folder of result records (required, except with --list-published)",
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
    parser.add_argument(
        "--offline",
        action="store_true",
        help="with --dry-run: ask GitHub nothing, only preview the notes from --results (a dry "
        "run does so by itself when GitHub cannot be reached); no token needed",
    )
    _fleet.add_runners_option(parser)
    _provenance.add_options(parser)
    parser.add_argument(
        "--preflight",
        action="store_true",
        help="only check that a release could publish (the lock committed, FLOX_FLOXHUB_TOKEN "
        "set, the environment there); exit 2 naming what is missing; a dry run only says it",
    )
    parser.add_argument(
        "--environment",
        default="release",
        metavar="NAME",
        help="--preflight: the deployment environment that holds FLOX_FLOXHUB_TOKEN "
        "(default: release)",
    )


def run(args: argparse.Namespace) -> int:
    from ci_tools.base import github_api, github_failures
    from ci_tools.catalog import variants
    from ci_tools.ship import release

    _check_options(args)
    catalog = _common.load(args)
    branch = catalog.branch(args.branch)
    settings = None if args.offline else github_api.settings_from_env(os.environ)
    if args.preflight:
        assert settings is not None
        return _release_checks.preflight(args, settings, POLICY)
    commit = release.validate_commit(os.environ.get("GITHUB_SHA") or _head_commit())
    branch_variants = tuple(variants.expand(catalog, branch.name))
    if args.list_published:
        assert settings is not None
        names = [v.name for v in branch_variants]
        for name in _published(settings, branch.name, commit, args.org, names):
            print(name)
        return 0
    if args.results is None and args.subjects is not None:
        assert settings is not None  # --offline with --subjects is refused in _check_options
        api = github_api.connect(settings, POLICY, print)
        return _provenance.subjects_of_release(
            api, release.tag_for(branch.name, commit), args.subjects
        )
    # What the fleet can do for each variant (runners.yaml now): the publish policy's bar.
    inventory = _fleet.for_catalog(args, catalog, Path.cwd())
    target = _Target(
        branch=branch,
        commit=commit,
        variants=branch_variants,
        tag=release.tag_for(branch.name, commit),
        scopes={v.name: _fleet.route(inventory, v).scope for v in branch_variants},
    )

    hide = settings.redact if settings is not None else redact.known()

    def say(line: str) -> None:
        print(hide(line), flush=True)

    planned = _planned(args.planned, branch.name)
    records = _run_records(args.results, target, bool(args.planned), say)
    if settings is None:
        return _release_offline.preview(args, target, records, planned, say, "--offline")
    try:
        api = github_api.connect(settings, POLICY, say)
    except github_failures.UnreachableError as exc:
        if not args.dry_run:
            raise
        return _release_offline.preview(
            args, target, records, planned, say, f"GitHub cannot be reached ({exc})"
        )
    return _release(args, api, target, records, planned, say)


def _release(
    args: argparse.Namespace,
    api: github_api.Api,
    target: _Target,
    records: list[ResultRecord],
    planned: list[str],
    say: Callable[[str], None],
) -> int:
    from ci_tools.build.smoke.expect import of_variants
    from ci_tools.ship import target as tag_target

    existing = api.find_release(target.tag)
    tag_target.check(api, existing, target.tag, target.commit)
    records = _with_previous_records(api, existing, records, target)
    notes, body = _release_offline.notes_of(args, target, records, planned)
    if not (notes.publishable if args.dry_run else notes.published):
        _release_checks.say_body(body, say)
        return _release_checks.nothing_published(
            notes, target.branch.name, existing, dry_run=args.dry_run, say=say
        )
    made = _provenance.of(
        notes,
        records,
        args.results,
        dry_run=args.dry_run,
        say=say,
        expect_of=of_variants(target.variants),
    )
    _provenance.write_subjects(args.subjects, made)
    if args.dry_run:
        _say_what_would_change(api, existing, target, notes, body, say)
        _provenance.say_would(made, say)
    else:
        written = _write_release(api, existing, target, notes, body, records, say)
        _provenance.attach(api, written, made, say)
    return _release_checks.conclude(notes, target.branch.name, say)


@dataclass(frozen=True, kw_only=True)
class _Target:
    """The release one run writes: the branch's release of one commit, and its results asset."""

    branch: Branch
    commit: str
    variants: tuple[Variant, ...]  # every variant of the branch
    tag: str
    scopes: Mapping[str, str]  # variant -> its route's scope (what the fleet can do for it)

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
    if not (args.list_published or args.preflight or args.subjects) and args.results is None:
        raise InputError("--results DIR is required: the folder of the result records")
    if args.offline and (
        not args.dry_run or args.list_published or args.preflight or args.subjects
    ):
        raise InputError(
            "--offline previews the notes of a dry run: use it with --dry-run, without "
            "--list-published, --preflight or --subjects"
        )


def _run_records(
    folder: Path, target: _Target, planned: bool, say: Callable[[str], None]
) -> list[ResultRecord]:
    """This run's records of the planned commit, each of a variant of the branch (bad input,
    exit 2, before GitHub). With a plan, a missing or empty folder is no records: every
    planned variant then failed (its job was cancelled, or never started)."""
    from ci_tools.build import results
    from ci_tools.ship import release

    if planned and (not folder.is_dir() or not any(folder.rglob(f"*{results.RESULT_SUFFIX}"))):
        say(f"{folder}: no result records: no planned variant wrote one")
        return []
    records, other = release.of_commit(results.load_dir(folder), target.commit)
    if other:
        named = sorted(f"{r.variant} @ {str(r.commit)[:12]}" for r in other)
        say(
            f"left out {len(other)} records of another commit than {target.commit[:12]} "
            f"({', '.join(named[:10])}): they say nothing of this build"
        )
    release.check_records(records, target.branch.name, (v.name for v in target.variants))
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
    body: Body,
    say: Callable[[str], None],
) -> None:
    if existing is None:
        latest = " as the latest release" if _latest(target, notes) else ""
        say(f"would create release {notes.tag} ({notes.name}) at {target.commit}{latest}")
        say(f"would upload asset {target.asset}")
    else:
        draft = " (a draft, kept as draft)" if existing.draft else ""
        say(f"would update release {notes.tag}{draft}: {existing.html_url}")
        replaced = api.existing_asset(existing, target.asset)
        say(f"would {'replace' if replaced else 'upload'} asset {target.asset}")
    if body.table is not None:
        say(f"would attach the full notes as {_table(notes)} (over {len(body.text)} characters)")
    _release_checks.say_body(body, say)


def _latest(target: _Target, notes: Notes) -> bool:
    """Only the default branch's release is "latest" (the CUDA branches sit beside it), and
    only when nothing failed: the latest release is what a person installs from."""
    return target.branch.name == "main" and not notes.failed


def _table(notes: Notes) -> str:
    from ci_tools.ship import notes as notes_text

    return notes_text.table_name(notes.tag)


def _write_release(
    api: github_api.Api,
    existing: GitRelease | None,
    target: _Target,
    notes: Notes,
    body: Body,
    records: Sequence[ResultRecord],
    say: Callable[[str], None],
) -> GitRelease:
    from ci_tools.ship import release

    data = (json.dumps(release.summary(notes, records), indent=2) + "\n").encode()
    latest = _latest(target, notes)
    if existing is None:
        made = api.create_release(
            tag=notes.tag, name=notes.name, body=body.text, commit=target.commit, latest=latest
        )
        say(f"created release {notes.tag}: {made.html_url}")
    else:
        made = api.update_release(
            existing, name=notes.name, body=body.text, commit=target.commit, latest=latest
        )
        state = " (kept as draft)" if made.draft else ""
        say(f"updated release {notes.tag}{state}: {made.html_url}")
    api.replace_asset(made, name=target.asset, data=data)
    say(f"attached {target.asset}")
    if body.table is not None:
        api.replace_asset(
            made, name=_table(notes), data=body.table.encode(), content_type="text/markdown"
        )
        say(f"attached {_table(notes)}: the notes are too long for a release body")
    return made


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
    from ci_tools.build import report

    if path is None:
        return []
    return [p.variant for p in report.load_planned(path) if p.branch in (None, branch)]


def _previous_asset(api: github_api.Api, existing: GitRelease, name: str) -> Any:
    """The JSON of the release's results asset from an earlier run, or None without one."""
    from ci_tools.base.errors import InputError
    from ci_tools.ship import release

    raw = api.asset_bytes(existing, name, release.MAX_ASSET_BYTES)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise InputError(f"asset {name} of release is not JSON: {exc}") from None


def _head_commit() -> str:
    from ci_tools.base import proc
    from ci_tools.base.errors import InputError

    result = proc.run(["git", "rev-parse", "HEAD"], timeout=60)
    if not result.ok:
        raise InputError("GITHUB_SHA is not set and `git rev-parse HEAD` failed: set GITHUB_SHA")
    return result.stdout.strip()
