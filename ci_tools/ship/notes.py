"""The release notes as Markdown, from `release.Notes` and the notes template."""

from __future__ import annotations

from pathlib import Path

from ci_tools.base.errors import InputError
from ci_tools.catalog import layout
from ci_tools.ship.release import Notes

NOTES_TEMPLATE = "release-notes.md.j2"


def render_notes(notes: Notes, templates_dir: Path) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateNotFound

    env = Environment(
        loader=FileSystemLoader(str(templates_dir)),
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
            f"{templates_dir / NOTES_TEMPLATE}: release notes template not found; "
            f"run ci-tools in the build repository's root"
        ) from None
    return template.render(notes=notes)


def templates_dir(catalog_path: Path) -> Path:
    return catalog_path.parent / layout.TEMPLATES_DIR
