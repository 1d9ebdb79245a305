"""Each branch's newest GitHub release and its results asset, read for the page: bounded, and
checked by `ci_tools.ship.released`.

GitHub's REST reference, "List releases" (docs.github.com/rest/releases/releases#list-releases):
`per_page` at most 100, the "Contents" permission (read) is enough, drafts only for a token
with push access. GitHub answers newest first (the reference does not promise an order, so
`released.newest` compares `created_at` among what was read). "Get a release asset" (docs.github.com/rest/releases/assets#get-a-release-asset):
with `Accept: application/octet-stream` the API streams the content (200) or redirects to it
(302); PyGithub's `download_asset` asks so and follows the redirect.

Requests: one page of releases (up to MAX_RELEASES // PER_PAGE pages while a branch has none
yet), then per release read one or two for its tag, one for its assets and one download: a
branch's newest release, and older ones (up to RELEASES_PER_BRANCH) only while some of its
variants have no published record yet. About 15 for three branches released whole, at most
60, against GITHUB_TOKEN's 1,000 an hour ("Rate limits for the REST API").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from ci_tools.base import github_answers
from ci_tools.base.errors import FailedError, InputError
from ci_tools.build.results import ResultRecord
from ci_tools.ship import release, released, target

if TYPE_CHECKING:
    from github.GitRelease import GitRelease

    from ci_tools.base.github_api import Api

# Releases read at most, newest first: one release per branch and commit, so this reaches
# back that many releases for a branch that has not been released lately.
MAX_RELEASES = 300
# A branch's releases whose assets are read, newest first: a release publishes the variants
# it selected, so a variant published by an earlier release (a narrower selection then, or a
# later one now) is still installed from FloxHub; the newest release that holds it wins.
RELEASES_PER_BRANCH = 5


def published(
    api: Api, branches: Mapping[str, Collection[str]], org: str, say: Callable[[str], None]
) -> list[ResultRecord]:
    """The records each branch's newest releases (RELEASES_PER_BRANCH) hold as published to
    `org`, the newest release's record of a variant winning. `branches`: branch -> its
    variants. A release that fails a check, or cannot be read, is left out with a line
    through `say` naming it and why; a branch without a release is said too."""
    listed = _listing(api, set(branches))
    found = released.recent([entry for entry, _ in listed], branches, RELEASES_PER_BRANCH)
    out: list[ResultRecord] = []
    for branch in branches:
        if branch not in found:
            say(f"branch {branch}: no release among the newest {MAX_RELEASES}: nothing published")
            continue
        have: set[str] = set()
        for index in found[branch]:
            entry, made = listed[index]
            shelf = _trusted_shelf(api, made, entry.tag, branch, branches[branch], org, say)
            if shelf is None:
                continue
            fresh = [record for record in shelf.records if record.variant not in have]
            have.update(record.variant for record in fresh)
            out.extend(fresh)
            if have >= set(branches[branch]):
                break
    return out


def _trusted_shelf(
    api: Api,
    made: GitRelease,
    tag: str,
    branch: str,
    variants: Collection[str],
    org: str,
    say: Callable[[str], None],
) -> released.Shelf | None:
    """The release's published records once its asset is believed; None (said) otherwise."""
    try:
        shelf = _shelf(api, made, tag, branch, variants, org)
    except released.Untrusted as exc:
        say(f"release {tag}: left out, not believed: {exc}")
        return None
    except (FailedError, InputError) as exc:
        say(f"release {tag}: left out, not read: {exc}")
        return None
    if shelf.elsewhere:
        say(
            f"release {tag}: {len(shelf.elsewhere)} variants published to another org "
            f"than {org} get no install line ({', '.join(shelf.elsewhere[:5])})"
        )
    return shelf


def _listing(api: Api, branches: set[str]) -> list[tuple[released.Listed, GitRelease]]:
    """Releases a page at a time, newest first, until every branch has one that is not a
    draft, or MAX_RELEASES were read."""
    out: list[tuple[released.Listed, GitRelease]] = []
    for number in range(MAX_RELEASES // github_answers.PER_PAGE):
        page = api.call(
            f"list releases (page {number + 1})",
            lambda n=number: github_answers.read_page(api.repository.get_releases(), n, _read),  # type: ignore[misc]
        )
        out.extend(page.items)
        if not page.full or set(released.newest([e for e, _ in out], branches)) == branches:
            break
    return out


def _read(made: Any) -> tuple[released.Listed, GitRelease] | None:
    """A listed release, or None when its tag or draft flag is not of GitHub's types."""
    tag = github_answers.text_or_none(made, "tag_name")
    try:
        draft, created = made.draft, made.created_at
    except github_answers.shape_errors():
        return None
    if tag is None or not isinstance(draft, bool):
        return None
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ") if hasattr(created, "strftime") else ""
    return released.Listed(tag=tag, draft=draft, created=stamp), made


def _shelf(
    api: Api, made: GitRelease, tag: str, branch: str, variants: Collection[str], org: str
) -> released.Shelf:
    commit = target.tag_commit(api, tag)
    if commit is None:  # `checked` refuses it; nothing to download
        raise released.Untrusted(f"tag {tag} does not exist")
    name = release.asset_name(tag)
    assets = github_answers.named(api.assets(made), name)
    if not assets:
        raise released.Untrusted(f"it has no asset {name}")
    raw = api.download(assets[0], name, release.MAX_ASSET_BYTES)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise released.Untrusted(f"asset {name} is not JSON: {exc}") from None
    return released.checked(data, tag=tag, branch=branch, commit=commit, variants=variants, org=org)
