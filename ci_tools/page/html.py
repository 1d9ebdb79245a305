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
from typing import Any

from ci_tools.base.errors import InputError
from ci_tools.build.report import format_bytes

TEMPLATE = "page/index.html.j2"
SCRIPT = "page/selector.js"
STYLE = "page/selector.css"
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
    templates_dir: Path,
    data: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
) -> str:
    import jinja2
    from markupsafe import Markup

    script = _read(templates_dir, SCRIPT)
    style = _read(templates_dir, STYLE)
    if "</" in script or "</" in style:
        raise InputError(f"{templates_dir}: the page's script and style may not hold '</'")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["size"] = lambda n: format_bytes(n) if isinstance(n, int) else "—"
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
        raise InputError(f"{templates_dir / TEMPLATE}: {exc}") from None


def _read(templates_dir: Path, name: str) -> str:
    path = templates_dir / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: not found; run ci-tools in the repository root") from None
