"""html: one self-contained file whose data cannot end its <script>, with a policy that runs
only the page's own script and style."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.page import html
from tests.conftest import REPO_ROOT

TEMPLATES = REPO_ROOT / "ci_tools" / "page" / "templates"
HOSTILE = "</script><script>alert(1)</script><!-- \u2028 & <b>"


def _data(extra: str = "") -> dict[str, object]:
    return {
        "catalog": "catalog.yaml" + extra,
        "generated": "2026-11-24",
        "org": "acme",
        "commands": {"gpu": "nvidia-smi", "flags": "grep flags"},
        "note": HOSTILE,
    }


def test_embedded_json_cannot_leave_its_script() -> None:
    text = html.embedded_json({"x": HOSTILE})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"x": HOSTILE}


def test_the_page_holds_its_data_script_and_style_and_nothing_else_runs() -> None:
    row = {"branch": "main", "name": "<img src=x>", "target": "t", "isa": "i", "cuda": "",
           "min_driver": "", "sizes": [1048576, None, None], "proven": "", "install": "i"}  # fmt: skip
    page = html.render(_data(" <i>"), [row])
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    (script,), (style,) = scripts, styles
    assert script == (TEMPLATES / html.SCRIPT).read_text()
    assert style == (TEMPLATES / html.STYLE).read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    csp = unescape(policy.group(1))
    assert f"script-src {html.csp_hash(script)};" in csp
    assert f"style-src {html.csp_hash(style)};" in csp
    assert "default-src 'none'" in csp
    # Catalog text and record text arrive escaped; the data block holds the hostile text intact.
    assert "catalog.yaml &lt;i&gt;" in page and "<img src=x>" not in page
    assert "1.0 MiB" in page
    data = re.search(
        r'<script type="application/json" id="ci-tools-data">(.*?)</script>', page, re.S
    )
    assert data is not None and json.loads(data.group(1))["note"] == HOSTILE
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page


def test_a_script_that_could_end_its_tag_is_refused(tmp_path: Path) -> None:
    for name in ("index.html.j2", "selector.css"):
        (tmp_path / name).write_text((TEMPLATES / name).read_text())
    (tmp_path / "selector.js").write_text("var x = '</script>';\n")
    with pytest.raises(InputError, match="may not hold"):
        html.render(_data(), [], tmp_path)


def test_missing_templates_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="missing from ci-tools' page templates"):
        html.render(_data(), [], tmp_path)


def test_query_values_index_tables_only_through_own() -> None:
    # Without a browser: where the script reads the query (fromQuery .. toQuery), a value from
    # the URL looks a table up only through own(), never as table[value], which finds
    # `constructor` or `__proto__` on every object's prototype (issue 29).
    script = (TEMPLATES / "selector.js").read_text(encoding="utf-8")
    reading = script[script.index("function fromQuery(") : script.index("function toQuery(")]
    raw = re.findall(r"[\w\]]\[(?:value|cpu|gpu|cc|flags|b|py|w|d|id)\]", reading)
    assert raw == [], f"look these up with own(table, key): {raw}"
    assert "function own(table, key)" in script
    assert "Object.prototype.hasOwnProperty.call(table, key)" in script
