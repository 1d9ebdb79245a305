"""The GitHub double's pull requests, environments and tags: what ci-tools reads to find the
greens a merge carried over, and to check a release before it builds.

Shapes follow GitHub's REST reference ("Commits: List pull requests associated with a
commit", "Pulls: Get a pull request / List commits on a pull request", "Deployment
environments: Get an environment", "Git references: Get a reference") and PyGithub's replay
data. Called by `server.GitHubDouble` under its lock.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.doubles.github.server import GitHubDouble, Identity

# "List commits on a pull request": "Lists a maximum of 250 commits for a pull request."
PULL_COMMITS_LIMIT = 250
NOT_FOUND = (404, {"message": "Not Found", "status": "404"})


def no_commit(sha: str) -> tuple[int, Any]:
    return 422, {"message": f"No commit found for SHA: {sha}", "status": "422"}


def body_too_long() -> tuple[int, Any]:
    return 422, {
        "message": "Validation Failed",
        "errors": [
            {
                "resource": "Release",
                "code": "custom",
                "field": "body",
                "message": "body is too long (maximum is 125000 characters)",
            }
        ],
    }


def pull(
    double: GitHubDouble,
    number: int,
    head: str,
    commits: list[str],
    merged: list[str] | None,
    base: str,
    head_repository: str | None,
) -> dict[str, Any]:
    assert commits and commits[-1] == head, "a pull request's commits end at its head"
    repo = head_repository or double.repository
    return {
        "url": double.api(f"/pulls/{number}"),
        "id": 5000 + number,
        "number": number,
        "state": "open" if merged is None else "closed",
        "title": f"pull request {number}",
        "user": {"login": "contributor", "type": "User"},
        "head": {"ref": f"topic-{number}", "sha": head, "repo": {"full_name": repo}},
        "base": {"ref": base, "sha": "0" * 40, "repo": {"full_name": double.repository}},
        "merged_at": None if merged is None else "2026-11-22T05:00:00Z",
        "merge_commit_sha": merged[-1] if merged else None,
        # Not GitHub fields: what the double answers from.
        "_commits": list(commits),
        "_merged": list(merged or []),
    }


def environment(double: GitHubDouble, name: str, reviewers: int) -> dict[str, Any]:
    rules = [
        {
            "id": 3736,
            "type": "required_reviewers",
            "reviewers": [
                {"type": "User", "reviewer": {"login": f"reviewer{n}"}} for n in range(reviewers)
            ],
        }
    ]
    return {
        "id": 161088068,
        "name": name,
        "url": double.api(f"/environments/{name}"),
        "html_url": f"https://github.com/{double.repository}/deployments/activity_log?environments_filter={name}",
        "created_at": "2026-11-01T00:00:00Z",
        "updated_at": "2026-11-01T00:00:00Z",
        "protection_rules": rules if reviewers else [],
        "deployment_branch_policy": None,
    }


def publish_tag(double: GitHubDouble, release: dict[str, Any]) -> None:
    """A published release creates its tag at `target_commitish` when the tag is missing
    (a draft's tag waits until it is published)."""
    tag = release["tag_name"]
    target = release.get("target_commitish") or ""
    if (
        not release.get("draft")
        and tag not in double.state.tags
        and re.fullmatch(r"[0-9a-f]{40}", target)
    ):
        double.state.tags[tag] = target


def route(
    double: GitHubDouble,
    method: str,
    rest: str,
    query: dict[str, list[str]],
    who: Identity,
) -> tuple[int, Any] | None:
    """The answer to `rest` (the path after /repos/{o}/{r}); None: not one of these."""
    if method != "GET":
        return None
    pulls = re.fullmatch(r"/commits/[^/]+/pulls|/pulls/.*", rest)
    if pulls and not who.may("pull-requests", "read"):
        return 403, {"message": "Resource not accessible by integration", "status": "403"}
    if m := re.fullmatch(r"/commits/([^/]+)/pulls", rest):
        sha = m.group(1)
        if not double.has_commit(sha):
            return no_commit(sha)
        found = [p for p in double.state.pulls if sha in p["_merged"] or sha in p["_commits"]]
        return 200, double.page([_public(p) for p in found], query)
    if m := re.fullmatch(r"/pulls/(\d+)(/commits)?", rest):
        wanted = next((p for p in double.state.pulls if p["number"] == int(m.group(1))), None)
        if wanted is None:
            return NOT_FOUND
        if not m.group(2):
            return 200, _public(wanted)
        listed = [_commit(double, sha) for sha in wanted["_commits"][:PULL_COMMITS_LIMIT]]
        return 200, double.page(listed, query)
    if m := re.fullmatch(r"/environments/([^/]+)", rest):
        if not who.may("actions", "read"):
            return 403, {"message": "Resource not accessible by integration", "status": "403"}
        env = double.state.environments.get(m.group(1))
        return (200, env) if env is not None else NOT_FOUND
    if m := re.fullmatch(r"/git/ref/tags/(.+)", rest):
        commit = double.state.tags.get(m.group(1))
        if commit is None:
            return NOT_FOUND
        return 200, {
            "ref": f"refs/tags/{m.group(1)}",
            "url": double.api(f"/git/refs/tags/{m.group(1)}"),
            "object": {
                "sha": commit,
                "type": "commit",
                "url": double.api(f"/git/commits/{commit}"),
            },
        }
    return None


def _public(pull: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pull.items() if not k.startswith("_")}


def _commit(double: GitHubDouble, sha: str) -> dict[str, Any]:
    return {
        "sha": sha,
        "url": double.api(f"/commits/{sha}"),
        "commit": {"message": "change", "author": {"name": "contributor"}},
        "parents": [],
    }
