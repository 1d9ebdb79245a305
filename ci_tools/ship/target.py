"""Where a release's tag sits: it must be the planned commit, or the release is refused.

GitHub binds a release to its tag: creating a release whose tag already exists uses that
tag's commit and ignores `target_commitish` ("Create a release": "Unused if the Git tag
already exists"), and updating one leaves its tag where it is. A tag `<branch>-<sha12>` that
sits on another commit (made by hand, or a 12-digit prefix shared by two commits) would
therefore publish notes of one commit under another's tag; it is refused instead.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ci_tools.base.errors import InputError
from ci_tools.base.github_answers import ShapeError

if TYPE_CHECKING:
    from github.GitRelease import GitRelease

    from ci_tools.base.github_api import Api

_SHA = re.compile(r"[0-9a-f]{40}")


def tag_commit(api: Api, tag: str) -> str | None:
    """The commit tag `tag` points at (through an annotated tag); None when there is none."""
    from github import UnknownObjectException

    def lookup() -> str | None:
        try:
            target = api.repository.get_git_ref(f"tags/{tag}").object
        except UnknownObjectException:
            return None
        if target.type == "tag":
            target = api.repository.get_git_tag(target.sha).object
        if not isinstance(target.sha, str) or not _SHA.fullmatch(target.sha):
            raise ShapeError(f"tag {tag} names no commit id: {target.sha!r}")
        return target.sha

    return api.call(f"look up tag {tag}", lookup)


def check(api: Api, existing: GitRelease | None, tag: str, commit: str) -> None:
    """InputError (exit 2) when the tag, or the existing release, is of another commit."""
    where = tag_commit(api, tag)
    if where is not None and where != commit:
        raise InputError(
            f"tag {tag} exists on commit {where}, not on the planned commit {commit}: GitHub "
            "would bind the release to that commit. Nothing was written; delete or rename "
            "that tag if it is wrong"
        )
    target = existing.target_commitish if existing is not None else None
    if target and _SHA.fullmatch(target) and target != commit:
        raise InputError(
            f"release {tag} already exists for commit {target}, not {commit}: nothing was "
            "written; delete that release if it is wrong"
        )
