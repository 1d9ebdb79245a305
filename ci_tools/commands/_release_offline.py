"""`ci-tools release --dry-run` without GitHub: the notes from this run's records alone
(`--offline`, or by itself when GitHub cannot be reached), and the notes of every release."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ci_tools.commands import _common, _release_checks

if TYPE_CHECKING:
    from ci_tools.build.results import ResultRecord
    from ci_tools.commands.release import _Target as Target
    from ci_tools.ship.notes import Body
    from ci_tools.ship.release import Notes


def preview(
    args: argparse.Namespace,
    target: Target,
    records: list[ResultRecord],
    planned: list[str],
    say: Callable[[str], None],
    why: str,
) -> int:
    """A dry run's notes from this run's records alone: no tag, release or asset is read."""
    notes, body = notes_of(args, target, records, planned)
    say(
        f"offline ({why}): nothing read from GitHub, so neither the tag's commit nor an "
        "earlier run's records at this commit are checked"
    )
    _release_checks.say_body(body, say)
    if not notes.publishable:
        return _release_checks.nothing_published(
            notes, target.branch.name, None, dry_run=True, say=say
        )
    say(f"would create or update release {notes.tag} ({notes.name}) at {target.commit}")
    return _release_checks.conclude(notes, target.branch.name, say)


def notes_of(
    args: argparse.Namespace, target: Target, records: list[ResultRecord], planned: list[str]
) -> tuple[Notes, Body]:
    from ci_tools.ship import notes as notes_text
    from ci_tools.ship import release

    notes = release.build_notes(
        branch=target.branch,
        variants=target.variants,
        records=records,
        commit=target.commit,
        org=args.org,
        planned=planned,
        scopes=target.scopes,
        page_url=notes_text.page_url(os.environ),
    )
    templates = notes_text.templates_dir(_common.catalog_path(args))
    return notes, notes_text.release_body(notes, templates)
