"""ci-tools' own templates: package data, read through importlib, never from the checkout.

An installed ci-tools (a wheel in another build repository) carries them; a command run in any
folder finds them. A folder given instead is for tests and for a template under edit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.base.errors import InputError

if TYPE_CHECKING:
    import jinja2

TEMPLATES = "templates"  # the package-data folder of each package that has templates


def loader(package: str, templates_dir: Path | None = None) -> jinja2.BaseLoader:
    """`templates_dir` when given, else `package`'s own `templates/` (package data)."""
    import jinja2

    if templates_dir is None:
        return jinja2.PackageLoader(package, TEMPLATES)
    if not templates_dir.is_dir():
        raise InputError(f"{templates_dir}: no templates here")
    return jinja2.FileSystemLoader(templates_dir)
