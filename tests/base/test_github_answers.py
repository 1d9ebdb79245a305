"""Reading GitHub's answers: pages by number and bounded, entries of the wrong shape left out,
a release's fields checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from ci_tools.base import github_answers
from ci_tools.base.github_answers import ShapeError


@dataclass
class Listing:
    pages: list[Any]
    asked: list[int]

    def get_page(self, number: int) -> Any:
        self.asked.append(number)
        return self.pages[number]


@dataclass
class Entry:
    name: Any


def test_a_page_reads_what_it_can_and_says_whether_another_may_follow() -> None:
    listing = Listing([[Entry("a"), Entry(None), Entry(3)]], [])
    page = github_answers.read_page(listing, 0, lambda e: github_answers.text_or_none(e, "name"))
    assert page.items == ("a",) and not page.full
    full = Listing([[Entry("x")] * github_answers.PER_PAGE], [])
    assert github_answers.read_page(full, 0, lambda e: e.name).full


@pytest.mark.parametrize("answer", [{"data": "<html>"}, "text", None])
def test_a_page_that_is_no_list_is_a_shape_error(answer: Any) -> None:
    with pytest.raises(ShapeError):
        github_answers.read_page(Listing([answer], []), 0, lambda e: e)


@dataclass
class Release:
    tag_name: Any = "main-0123456789ab"
    draft: Any = False
    prerelease: Any = None
    html_url: Any = "https://github.com/a/b/releases/tag/x"


@pytest.mark.parametrize(
    "fields",
    [{"tag_name": None}, {"draft": None}, {"draft": "false"}, {"prerelease": 0}, {"html_url": 1}],
)
def test_a_release_of_the_wrong_shape_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ShapeError):
        github_answers.checked_release(Release(**fields))


def test_a_release_with_prerelease_null_is_read() -> None:
    release = Release()
    assert github_answers.checked_release(release) is release
