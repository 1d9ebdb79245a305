"""GitHub's answers read defensively: a proxy's HTML page, an object where a list belongs, a
null where a string or a boolean belongs, or "next" pages for ever are a failed call
(`ShapeError`), never a crash, and no listing reads more than `MAX_PAGES` pages.

PyGithub builds its objects from whatever JSON arrives and checks types only when an
attribute is read (BadAttributeException), or not at all (a null is None); an answer that is
not JSON becomes `{"data": TEXT}`, which a list of objects then fails to read (TypeError).
So every attribute ci-tools uses is read here, inside the call that fetched it (`Api.call`
turns what this raises into a FailedError), and each list is read a page at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Pages of a listing ci-tools reads at most (100 items a page): a repository's releases are
# looked through for a draft, a release's assets (GitHub allows 1000) for one name.
MAX_PAGES = 10
PER_PAGE = 100


class ShapeError(Exception):
    """An answer that is not of the shape GitHub's REST API documents for that endpoint."""


def shape_errors() -> tuple[type[BaseException], ...]:
    """What reading an answer of the wrong shape raises, in PyGithub or here."""
    from github import BadAttributeException

    return (ShapeError, BadAttributeException, TypeError, AttributeError, KeyError, ValueError)


def describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True)
class Page(Generic[T]):
    items: tuple[T, ...]  # the entries `read` could read
    full: bool  # as many entries as a page holds: there may be another


def read_page(listing: Any, number: int, read: Callable[[Any], T | None]) -> Page[T]:
    """Page `number` (from 0) of a PyGithub PaginatedList, each entry through `read` (None:
    an entry that is not of the shape, left out). Requested by number, so a "next" link
    is never followed."""
    entries = listing.get_page(number)
    if not isinstance(entries, list):
        raise ShapeError(f"page {number + 1} is not a list")
    items = [read(entry) for entry in entries]
    return Page(items=tuple(i for i in items if i is not None), full=len(entries) >= PER_PAGE)


def text_or_none(entry: Any, name: str) -> str | None:
    """Attribute `name` of `entry` when it is a string; None when it is anything else."""
    try:
        value = getattr(entry, name)
    except shape_errors():
        return None
    return value if isinstance(value, str) else None


def checked_release(release: R) -> R:
    """`release` once what ci-tools reads of it is of the documented types: `tag_name` a
    string, `draft` a boolean, `prerelease` a boolean or null (read as false), `html_url` a
    string or null. A draft whose `draft` is unknown could be published by mistake: refused."""
    read: Any = release
    tag, draft, prerelease, url = read.tag_name, read.draft, read.prerelease, read.html_url
    if not isinstance(tag, str):
        raise ShapeError(f"release tag_name is {tag!r}, not a string")
    if not isinstance(draft, bool):
        raise ShapeError(f"release {tag} has draft {draft!r}, not a boolean")
    if prerelease is not None and not isinstance(prerelease, bool):
        raise ShapeError(f"release {tag} has prerelease {prerelease!r}")
    if url is not None and not isinstance(url, str):
        raise ShapeError(f"release {tag} has html_url {url!r}")
    return release


def named(entries: Sequence[tuple[str, T]], name: str) -> list[T]:
    return [entry for entry_name, entry in entries if entry_name == name]
