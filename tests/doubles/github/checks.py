"""The GitHub double's check runs: "Create a check run" and "List check runs for a Git
reference" (GitHub's REST reference, "Check runs"), the record of a run's greens in aggregate
(ci_tools/plan/greens_aggregate.py). Called by `server.GitHubDouble` under its lock.

What GitHub refuses, the double refuses: a check run created by anything but a GitHub App
(a user's token: 403, "Check runs" says only GitHub Apps may create them); a token without
`checks: write` (403); no `name` or a malformed `head_sha` (422); a commit the repository
does not have (422); `output.summary` or `output.text` over 65,535 characters (422). Listing
honours `check_name` and `filter`: `latest` (the default) lists only the most recent check
run of each name, `all` every one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.doubles.github.server import GitHubDouble, Identity

OUTPUT_LIMIT = 65_535
SHA = re.compile(r"[0-9a-f]{40}")
ACTIONS_APP = {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"}


def invalid(field: str) -> tuple[int, Any]:
    return 422, {"message": "Validation Failed", "errors": [{"field": field, "code": "invalid"}]}


def create(double: GitHubDouble, data: dict[str, Any], who: Identity) -> tuple[int, Any]:
    login = str(who.user.get("login", ""))
    if who.user.get("type") != "Bot":
        return 403, {"message": "You must authenticate via a GitHub App.", "status": "403"}
    name, sha = data.get("name"), data.get("head_sha")
    if not isinstance(name, str) or not name:
        return invalid("name")
    if not isinstance(sha, str) or not SHA.fullmatch(sha):
        return invalid("head_sha")
    if not double.has_commit(sha):
        return 422, {"message": f"No commit found for SHA: {sha}", "status": "422"}
    output = data.get("output") or {}
    for key in ("summary", "text"):
        if len(str(output.get(key) or "")) > OUTPUT_LIMIT:
            return invalid(f"output.{key}")
    app = (
        ACTIONS_APP
        if login == "github-actions[bot]"
        else {"id": 9000 + len(login), "slug": login.removesuffix("[bot]"), "name": login}
    )
    rid = double.state.new_id()
    run = {
        "id": rid,
        "url": double.api(f"/check-runs/{rid}"),
        "name": name,
        "head_sha": sha,
        "status": data.get("status", "queued"),
        "conclusion": data.get("conclusion"),
        "details_url": data.get("details_url"),
        "started_at": "2026-11-22T04:00:00Z",
        "completed_at": "2026-11-22T04:00:00Z",
        "output": {
            "title": output.get("title"),
            "summary": output.get("summary"),
            "text": output.get("text"),
            "annotations_count": 0,
        },
        "app": dict(app),
        "pull_requests": [],
    }
    double.state.check_runs.append(run)
    return 201, run


def route(
    double: GitHubDouble,
    method: str,
    rest: str,
    query: dict[str, list[str]],
    body: Any,
    who: Identity,
) -> tuple[int, Any] | None:
    """The answer to `rest` (the path after /repos/{o}/{r}); None: not one of these."""
    if rest == "/check-runs" and method == "POST":
        return create(double, body(), who)
    m = re.fullmatch(r"/commits/([^/]+)/check-runs", rest)
    if m is None or method != "GET":
        return None
    if not who.may("checks", "read"):
        return 403, {"message": "Resource not accessible by integration", "status": "403"}
    sha = m.group(1)
    runs = [r for r in reversed(double.state.check_runs) if r["head_sha"] == sha]
    if "check_name" in query:
        runs = [r for r in runs if r["name"] == query["check_name"][0]]
    if query.get("filter", ["latest"])[0] != "all":
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for r in runs:  # newest first
            latest.setdefault((r["name"], r["app"]["slug"]), r)
        runs = list(latest.values())
    listed = double.page(runs, query)
    return 200, {"total_count": len(runs), "check_runs": listed}


def greens(double: GitHubDouble, sha: str, wanted: dict[str, str]) -> dict[str, str]:
    """Which of `wanted` (stack -> fingerprint) the check runs of the GitHub Actions app on
    `sha` record green, in the aggregate's format (ci_tools/plan/greens_aggregate.py)."""
    from ci_tools.plan import greens_aggregate

    lines = {
        line
        for run in double.state.check_runs
        if run["head_sha"] == sha
        and run["name"] == greens_aggregate.CHECK_NAME
        and run["app"]["slug"] == ACTIONS_APP["slug"]
        and run["conclusion"] == "success"
        for line in (run["output"]["text"] or "").splitlines()
    }
    return {s: fp for s, fp in wanted.items() if greens_aggregate.digest(s, fp) in lines}
