"""The selector page as one HTML file: the data embedded as JSON, the script and the style
inline, nothing fetched when it is viewed (it works from file://).

The page's own Content-Security-Policy allows only its inline script and style, by hash: even
text that reached the page as markup could run nothing. Query values are only ever set as text
by the script (selector.js), never parsed as HTML.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tools.base import packaged
from ci_tools.base.errors import InputError
from ci_tools.build.report import format_bytes

if TYPE_CHECKING:
    import jinja2

# ci-tools' own files, package data under ci_tools/page/templates/.
TEMPLATE = "index.html.j2"
SCRIPT = "selector.js"
STYLE = "selector.css"
# Characters that must not appear raw inside <script>: `</script>`, `<!--`, and the two line
# separators older parsers end a JavaScript string at.
_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def embedded_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    for raw, escaped in _JSON_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render(
    data: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    templates_dir: Path | None = None,
) -> str:
    """The page; `templates_dir` replaces ci-tools' own templates (tests only)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=packaged.loader("ci_tools.page", templates_dir),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["size"] = lambda n: format_bytes(n) if isinstance(n, int) else "—"
    script = _read(env, SCRIPT)
    style = _read(env, STYLE)
    if "</" in script or "</" in style:
        raise InputError(f"{SCRIPT}, {STYLE}: the page's script and style may not hold '</'")
    csp = (
        "default-src 'none'; "
        f"script-src {csp_hash(script)}; style-src {csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    try:
        template = env.get_template(TEMPLATE)
        return template.render(
            data=data,
            rows=rows,
            csp=csp,
            # Not escaped as HTML, by design: the script and the style are this repository's
            # own files (checked above to hold no `</`), and the JSON is escaped for <script>
            # by embedded_json (no `<`, `>` or `&` left in it).
            script=Markup(script),  # noqa: S704
            style=Markup(style),  # noqa: S704
            data_json=Markup(embedded_json(data)),  # noqa: S704
        )
    except jinja2.TemplateError as exc:
        raise InputError(f"{TEMPLATE}: {exc}") from None


def _read(env: jinja2.Environment, name: str) -> str:
    """A file of the page's templates, as its loader finds it (package data or a folder)."""
    import jinja2

    assert env.loader is not None
    try:
        return env.loader.get_source(env, name)[0]
    except jinja2.TemplateNotFound:
        raise InputError(
            f"{name}: missing from ci-tools' page templates; reinstall ci-tools"
        ) from None
