"""The release notes as Markdown, from `release.Notes` and the notes template.

GitHub refuses a release body over 125,000 characters (422 "body is too long (maximum is
125000 characters)"; softprops/action-gh-release#374, scikit-build/github-release#65), which
the full table passes at about 590 variants. Over `BODY_LIMIT` the body summarises (versions,
counts, the first failures) and points to the full notes, attached as `table_name(tag)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import packaged
from ci_tools.base.errors import InputError
from ci_tools.catalog import grammar as g
from ci_tools.catalog import layout
from ci_tools.ship.release import Notes

NOTES_TEMPLATE = "release-notes.md.j2"
# ci-tools' own notes template is package data (ci_tools/ship/templates/); a repository's
# templates/release-notes.md.j2 replaces it.
# Below GitHub's 125,000 characters, with room for GitHub's own counting of what it stores.
BODY_LIMIT = 100_000
FAILED_SHOWN = 100  # failures a summary names


def table_name(tag: str) -> str:
    return f"notes-{tag}.md"


@dataclass(frozen=True, kw_only=True)
class Body:
    text: str  # the release body
    table: str | None  # the full notes, to attach as `table_name(tag)`, when `text` summarises


def release_body(notes: Notes, templates_dir: Path) -> Body:
    """The notes in full, or, over BODY_LIMIT, a summary and the full notes to attach."""
    full = render_notes(notes, templates_dir)
    if len(full) <= BODY_LIMIT:
        return Body(text=full, table=None)
    summary = render_notes(notes, templates_dir, full=False)
    return Body(text=summary, table=full)


def render_notes(notes: Notes, templates_dir: Path, *, full: bool = True) -> str:
    """The notes from the repository's template where it has one, else ci-tools' own."""
    from jinja2 import (
        ChoiceLoader,
        Environment,
        FileSystemLoader,
        StrictUndefined,
        TemplateNotFound,
    )

    env = Environment(
        loader=ChoiceLoader(
            [FileSystemLoader(str(templates_dir)), packaged.loader("ci_tools.ship")]
        ),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # noqa: S701  Markdown for GitHub, not HTML
    )
    try:
        template = env.get_template(NOTES_TEMPLATE)
    except TemplateNotFound:
        raise InputError(
            f"{NOTES_TEMPLATE}: ci-tools' release notes template is "
            "missing from its installation; reinstall ci-tools, or put one at "
            f"{templates_dir / NOTES_TEMPLATE}"
        ) from None
    return template.render(
        notes=notes, full=full, failed_shown=FAILED_SHOWN, table=table_name(notes.tag)
    )


def page_url(env: Mapping[str, str]) -> str | None:
    """Where the release workflow deploys the selector page: the repository's GitHub Pages
    site (https://OWNER.github.io/REPO/, or the root for a repository OWNER.github.io)."""
    owner, _, name = env.get("GITHUB_REPOSITORY", "").partition("/")
    if g.ORG.problem(owner) is not None or not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", name):
        return None
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{name}/"


def templates_dir(catalog_path: Path) -> Path:
    return catalog_path.parent / layout.TEMPLATES_DIR
