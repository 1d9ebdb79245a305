"""docs/adoption.md shows an adopting repository's ci.yml and release.yml in full; they are this
repository's own callers but for the refs, the `ci-tools` input and this repository's own
`test` and `lint` jobs (marked in ci.yml), so the page cannot drift from what runs here."""

from __future__ import annotations

import re
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.workflows.test_reusable import OWN
from tests.workflows.test_workflows import REPO_ROOT, WORKFLOWS

PAGE = REPO_ROOT / "docs" / "adoption.md"
REF = "OWNER/REPO"
PIN = "<SHA>"
ADOPTED = f"ci-tools @ git+https://github.com/{REF}@{PIN}"
OWN_LINE = "# this repository's own"
OWN_BLOCK = re.compile(
    r"^  # >>> this repository's own.*?^  # <<< this repository's own.*?\n\n", re.M | re.S
)
LOCAL = re.compile(r"uses: \./\.github/workflows/([\w.-]+\.yml)(?: # zizmor: ignore\[([\w,-]+)\])?")


def _ref(match: re.Match[str]) -> str:
    """The adopter's ref; zizmor's `self-repository` is about a local ref, which it has none of."""
    kept = [r for r in (match[2] or "").split(",") if r and r != "self-repository"]
    ignore = f" # zizmor: ignore[{','.join(kept)}]" if kept else ""
    return f"uses: {REF}/.github/workflows/{match[1]}@{PIN}{ignore}"


def adopted(name: str) -> str:
    """What an adopting repository's workflow NAME is: this repository's, with the calls at
    OWNER/REPO@<SHA> and without this repository's own jobs and lines."""
    text = OWN_BLOCK.sub("", (WORKFLOWS / name).read_text(encoding="utf-8"))
    text = "".join(
        line for line in text.splitlines(keepends=True) if not line.rstrip().endswith(OWN_LINE)
    )
    return LOCAL.sub(_ref, text.replace(OWN, ADOPTED))


def shown() -> dict[str, str]:
    """The page's YAML blocks that are whole workflows, by their `name:`."""
    blocks = re.findall(r"^```yaml\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.M | re.S)
    found = {}
    for block in blocks:
        doc = YAML(typ="safe").load(block)
        if isinstance(doc, dict) and "jobs" in doc:
            found[str(doc["name"])] = block
    return found


@pytest.mark.parametrize("name", ["ci", "release"])
def test_the_page_shows_the_callers_in_full(name: str) -> None:
    assert shown().get(name) == adopted(f"{name}.yml"), (
        f"docs/adoption.md's {name}.yml is not this repository's caller as adopted: "
        "rewrite it from tests/workflows/test_adoption_callers.py's adopted()"
    )


@pytest.mark.parametrize("name", ["ci.yml", "release.yml"])
def test_an_adopters_caller_runs_nothing_of_this_repository(name: str) -> None:
    text = adopted(name)
    doc: dict[str, Any] = YAML(typ="safe").load(text)
    assert "./" not in text and ".ci/" not in text and OWN_LINE not in text
    assert "test" not in doc["jobs"] and "lint" not in doc["jobs"]
    refs = {str(j["uses"]) for j in doc["jobs"].values() if "uses" in j}
    assert refs and all(
        re.fullmatch(rf"{REF}/\.github/workflows/[\w.-]+\.yml@{PIN}", r) for r in refs
    )
    assert {j["with"]["ci-tools"] for j in doc["jobs"].values() if "uses" in j} == {ADOPTED}
    if name == "ci.yml":
        # The gate needs what remains, and reads each result it needs.
        gate = doc["jobs"]["gate"]
        assert gate["needs"] == ["plan", "build-0", "build-1", "build-2", "build-3"]
        assert sorted(gate["steps"][0]["env"]) == [
            "BUILD_0",
            "BUILD_1",
            "BUILD_2",
            "BUILD_3",
            "PLAN",
        ]


def test_this_repositorys_own_lines_are_only_its_tests() -> None:
    """What the markers take out of ci.yml: the test and lint jobs and the gate's test."""
    text = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    (block,) = OWN_BLOCK.findall(text)
    jobs = YAML(typ="safe").load("jobs:\n" + block)["jobs"]
    assert set(jobs) == {"test", "lint"}
    lines = [line.strip() for line in text.splitlines() if line.rstrip().endswith(OWN_LINE)]
    assert lines == [
        f"- test {OWN_LINE}",
        f"TEST: ${{{{ needs.test.result }}}} {OWN_LINE}",
        f'pairs+=("test:$TEST") {OWN_LINE}',
    ]
    assert not any(
        line.rstrip().endswith(OWN_LINE)
        for line in (WORKFLOWS / "release.yml").read_text().splitlines()
    )


if __name__ == "__main__":  # print the adopted callers, to paste into docs/adoption.md
    for workflow in ("ci.yml", "release.yml"):
        print(f"```yaml\n{adopted(workflow)}```\n")
