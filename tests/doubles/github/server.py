"""A GitHub REST API double on 127.0.0.1: the releases and commit-statuses endpoints ci-tools
uses, with state the tests read.

Endpoints and shapes follow GitHub's REST reference ("Releases", "Release assets", "Commit
statuses") and the JSON PyGithub's own replay data records (tests/data/github-*.json here):
* GET  /repos/{o}/{r}                              the repository (PyGithub's get_repo)
* GET  /repos/{o}/{r}/releases                     list, newest first; drafts only for a token
  that may write contents ("List releases")
* GET  /repos/{o}/{r}/releases/tags/{tag}          one release, 404 when none
* POST /repos/{o}/{r}/releases                     create; 422 `already_exists` on a taken tag
* PATCH /repos/{o}/{r}/releases/{id}               update
* GET  /repos/{o}/{r}/releases/{id}/assets         list assets
* POST /uploads/repos/{o}/{r}/releases/{id}/assets?name=N   upload (the release's upload_url
  points here); 422 `already_exists` on a taken name, as GitHub answers
* GET  /repos/{o}/{r}/releases/assets/{id}         the asset's JSON; with Accept:
  application/octet-stream a 302 to its content at /storage/assets/{id} ("Get a release
  asset": "redirect the client to the location, or stream it directly"; the location is a
  signed URL of another host, read without the token)
* DELETE /repos/{o}/{r}/releases/assets/{id}       204
* POST /repos/{o}/{r}/statuses/{sha}               create a status; state must be one of
  error, failure, pending, success (422 otherwise); sha must be 40 hex (422)
* GET  /repos/{o}/{r}/commits/{ref}/statuses       newest first (also GET /statuses/{sha},
  the path PyGithub's Commit.get_statuses uses); each status has the `creator` of the token
  that posted it
* GET  /repos/{o}/{r}/commits/{sha}/pulls          the pull requests associated with a commit
  ("Commits": the merged pull request that introduced it, and open ones containing it)
* GET  /repos/{o}/{r}/pulls/{n}, /pulls/{n}/commits a pull request, its commits (oldest first,
  at most 250: "List commits on a pull request"); both pull request reads need
  `pull-requests: read` (GitHub's permission table for GITHUB_TOKEN)
* GET  /repos/{o}/{r}/environments/{name}          an environment ("Deployment environments"),
  404 when none; needs `actions: read`
* GET  /repos/{o}/{r}/git/ref/tags/{tag}            a tag ("Git references"), 404 when none
* POST /repos/{o}/{r}/check-runs, GET /repos/{o}/{r}/commits/{ref}/check-runs   check runs
  (tests/doubles/github/checks.py)
Every request is counted against GitHub's primary and secondary REST rate limits, and
refused past them with the headers GitHub sends (tests/doubles/github/limits.py); a test
may turn that off (`rate_limits=False`) only to model something else than GitHub.
Lists are paged (`page` from 1, `per_page` 30 by default, at most 100).

Identities and permissions (`grant`): by default every token is GITHUB_TOKEN with write
access, creator `github-actions[bot]`; a test can make a token another user's or app's, or
read-only. What GitHub refuses, the double refuses:
* no `Authorization`: 401 (as GitHub does for writes);
* a write the token's permissions do not cover (a fork's or Dependabot's read-only
  GITHUB_TOKEN, docs "Automatic token authentication"): 403 "Resource not accessible by
  integration";
* a status `state` outside error, failure, pending, success, or a malformed sha: 422; a sha
  the repository does not have (when the test names its commits): 422 "No commit found for
  SHA" ("Create a commit status");
* a release body over 125,000 characters: 422 "body is too long (maximum is 125000
  characters)" (GitHub's answer: softprops/action-gh-release#374);
* creating a release whose tag exists binds it to that tag's commit, whatever
  `target_commitish` says ("Create a release": target_commitish is "Unused if the Git tag
  already exists"); a published (non-draft) release creates its missing tag.
Loopback only; bounded (a request body over 64 MiB is refused with 413); the server thread
stops itself after `lifetime` seconds if the test never stops it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.doubles.github import checks, graph
from tests.doubles.github.limits import RateLimits

MAX_BODY = 64 * 1024 * 1024
MAX_RELEASE_BODY = 125_000
STATES = {"error", "failure", "pending", "success"}
SHA = re.compile(r"[0-9a-f]{40}")
TIME = "2026-11-22T04:00:00Z"
ACTIONS_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
NOT_ACCESSIBLE = (403, {"message": "Resource not accessible by integration", "status": "403"})
# GITHUB_TOKEN's permissions in a trusted run of a workflow that grants them.
WRITE = {
    "statuses": "write",
    "contents": "write",
    "checks": "write",
    "actions": "read",
    "pull-requests": "read",
}
READ_ONLY = {
    "statuses": "read",
    "contents": "read",
    "checks": "read",
    "actions": "read",
    "pull-requests": "read",
}


@dataclass(frozen=True)
class Identity:
    user: dict[str, Any]  # the `creator` / `author` GitHub shows
    permissions: dict[str, str]  # scope -> "read" | "write"

    def may(self, scope: str, level: str) -> bool:
        have = self.permissions.get(scope)
        return have == "write" or (level == "read" and have == "read")


@dataclass
class State:
    releases: list[dict[str, Any]] = field(default_factory=list)
    assets: dict[int, bytes] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)  # oldest first
    requests: list[tuple[str, str]] = field(default_factory=list)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)  # tag -> commit
    identities: dict[str, Identity] = field(default_factory=dict)  # token -> who
    # Whether the repository has a commit; None: any well-formed sha.
    commit_exists: Callable[[str], bool] | None = None
    revoked: set[str] = field(default_factory=set)  # tokens GitHub answers 401 for
    next_id: int = 1000

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id


class GitHubDouble:
    def __init__(
        self,
        repository: str = "acme/torch-builds",
        lifetime: float = 600.0,
        *,
        rate_limits: bool = True,
    ) -> None:
        self.repository = repository
        self.state = State()
        self.limits = RateLimits() if rate_limits else None
        self.lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                double.handle(self, "GET")

            def do_POST(self) -> None:
                double.handle(self, "POST")

            def do_PATCH(self) -> None:
                double.handle(self, "PATCH")

            def do_DELETE(self) -> None:
                double.handle(self, "DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.timer = threading.Timer(lifetime, self.stop)
        self.timer.daemon = True

    def __enter__(self) -> GitHubDouble:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()

    # --- state the tests read -----------------------------------------------------------

    def release(self, tag: str) -> dict[str, Any] | None:
        return next((r for r in self.state.releases if r["tag_name"] == tag), None)

    def statuses(self, sha: str) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.state.statuses.get(sha, []))

    def greens(self, sha: str, wanted: dict[str, str]) -> dict[str, str]:
        """Which of `wanted` (stack -> fingerprint) a run published green on `sha` (its check
        run of greens, `ci-tools mark-green --publish`)."""
        with self.lock:
            return checks.greens(self, sha, wanted)

    def seed_status(
        self, sha: str, state: str, context: str, description: str, token: str | None = None
    ) -> None:
        """A status some earlier run posted (through the same rules as the endpoint), as the
        identity of `token` (by default GITHUB_TOKEN's)."""
        with self.lock:
            code, _ = self.create_status(
                sha,
                {"state": state, "context": context, "description": description},
                self.identity(token or ""),
            )
        assert code == 201, (sha, state, code)

    def grant(
        self,
        token: str,
        *,
        login: str = "github-actions[bot]",
        kind: str = "Bot",
        permissions: dict[str, str] | None = None,
    ) -> None:
        """Make `token` another identity's, or with other permissions (READ_ONLY: a fork's
        or Dependabot's GITHUB_TOKEN)."""
        user = ACTIONS_BOT if login == ACTIONS_BOT["login"] else {"login": login, "type": kind}
        with self.lock:
            self.state.identities[token] = Identity(
                user=dict(user, id=user.get("id", 1000 + len(self.state.identities))),
                permissions=dict(WRITE if permissions is None else permissions),
            )

    def identity(self, token: str) -> Identity:
        return self.state.identities.get(token) or Identity(user=ACTIONS_BOT, permissions=WRITE)

    def know_commits(self, exists: Callable[[str], bool]) -> None:
        """Which commits the repository has: statuses and pull lookups of any other sha are
        refused, as GitHub refuses them."""
        with self.lock:
            self.state.commit_exists = exists

    def has_commit(self, sha: str) -> bool:
        return self.state.commit_exists is None or self.state.commit_exists(sha)

    def revoke(self, token: str) -> None:
        with self.lock:
            self.state.revoked.add(token)

    def add_pull(
        self,
        number: int,
        *,
        head: str,
        commits: list[str],
        merged: list[str] | None = None,
        base: str = "main",
        head_repository: str | None = None,
    ) -> None:
        """A pull request: `commits` oldest first, ending at `head`; `merged`: the commits
        its merge put on `base` (a merge commit, the squash commit, or the rebased
        commits); None: still open."""
        with self.lock:
            self.state.pulls.append(
                graph.pull(self, number, head, commits, merged, base, head_repository)
            )

    def add_environment(self, name: str, *, reviewers: int = 1) -> None:
        with self.lock:
            self.state.environments[name] = graph.environment(self, name, reviewers)

    def add_tag(self, tag: str, commit: str) -> None:
        with self.lock:
            self.state.tags[tag] = commit

    def asset_bytes(self, tag: str, name: str) -> bytes | None:
        release = self.release(tag)
        asset = next((a for a in (release or {}).get("assets", []) if a["name"] == name), None)
        return None if asset is None else self.state.assets[asset["id"]]

    # --- HTTP ---------------------------------------------------------------------------

    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(req.path)
        length = int(req.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.reply(req, 413, {"message": "Payload Too Large"})
            return
        body = req.rfile.read(length) if length else b""
        headers: dict[str, str] = {}
        with self.lock:
            self.state.requests.append((method, parts.path))
            token = (req.headers.get("Authorization") or "").split(" ")[-1]
            stored = re.fullmatch(r"/storage/assets/(\d+)", parts.path)
            if method == "GET" and stored:
                # The signed location an asset download redirects to: no token asked.
                status, payload = self.stored(int(stored.group(1)))
            elif not token or token in self.state.revoked:
                message = "Bad credentials" if token else "Requires authentication"
                status, payload = 401, {"message": message}
            else:
                limited = self.limits.admit(method, parts.path) if self.limits else None
                headers = limited.headers if limited else {}
                if limited is not None and limited.status:
                    status, payload = limited.status, limited.payload
                else:
                    status, payload = self.answer(req, method, parts, body, token)
        self.reply(req, status, payload, headers)

    def answer(
        self, req: BaseHTTPRequestHandler, method: str, parts: Any, body: bytes, token: str
    ) -> tuple[int, Any]:
        try:
            who = self.identity(token)
            if method != "GET" and not self.may_write(parts.path, who):
                return NOT_ACCESSIBLE
            return self.route(method, parts.path, parse_qs(parts.query), body, req, who)
        except (ValueError, KeyError):
            return 400, {"message": "Problems parsing JSON"}

    def reply(
        self,
        req: BaseHTTPRequestHandler,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        req.send_response(status)
        if status == 302:
            req.send_header("Location", payload["location"])
        ctype = "application/octet-stream" if isinstance(payload, bytes) else "application/json"
        req.send_header("Content-Type", ctype)
        req.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            req.send_header(name, value)
        req.end_headers()
        if status != 204:
            req.wfile.write(raw)

    def api(self, path: str) -> str:
        return f"{self.url}/repos/{self.repository}{path}"

    def may_write(self, path: str, who: Identity) -> bool:
        scope = "statuses" if "/statuses/" in path else "contents"
        if path.endswith("/check-runs"):
            scope = "checks"
        return who.may(scope, "write")

    def route(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: bytes,
        req: BaseHTTPRequestHandler,
        who: Identity,
    ) -> tuple[int, Any]:
        repo = f"/repos/{self.repository}"
        upload = f"/uploads{repo}/releases/"
        not_found = (404, {"message": "Not Found", "status": "404"})
        if path == repo and method == "GET":
            owner, name = self.repository.split("/")
            return 200, {
                "id": 1,
                "name": name,
                "full_name": self.repository,
                "owner": {"login": owner},
                "url": self.api(""),
                "default_branch": "main",
            }
        if path.startswith(upload) and method == "POST":
            return self.upload(int(path[len(upload) :].split("/")[0]), query, body, req)
        if not path.startswith(repo + "/"):
            return not_found
        rest = path[len(repo) :]
        found = graph.route(self, method, rest, query, who)
        if found is None:
            found = checks.route(self, method, rest, query, lambda: json.loads(body), who)
        if found is not None:
            return found
        if rest == "/releases" and method == "POST":
            return self.create_release(json.loads(body))
        if rest.startswith("/releases/tags/") and method == "GET":
            release = self.release(rest.removeprefix("/releases/tags/"))
            return (200, release) if release else not_found
        if m := re.fullmatch(r"/releases/assets/(\d+)", rest):
            return self.asset(method, int(m.group(1)), req)
        if m := re.fullmatch(r"/releases/(\d+)(/assets)?", rest):
            release = next((r for r in self.state.releases if r["id"] == int(m.group(1))), None)
            if release is None:
                return not_found
            if m.group(2) and method == "GET":
                return 200, release["assets"]
            if method == "PATCH":
                data = json.loads(body)
                if len(data.get("body") or "") > MAX_RELEASE_BODY:
                    return graph.body_too_long()
                for key in ("name", "body", "draft", "prerelease", "target_commitish", "tag_name"):
                    if key in data:
                        release[key] = data[key]
                if "make_latest" in data:
                    release["make_latest"] = data["make_latest"]
                graph.publish_tag(self, release)
                return 200, release
            if method == "GET":
                return 200, release
        if (m := re.fullmatch(r"/statuses/([^/]+)", rest)) and method == "POST":
            return self.create_status(m.group(1), json.loads(body), who)
        # PyGithub's Commit.get_statuses reads the older path GET /statuses/{sha}
        # (github/Commit.py), which GitHub still serves with the same answer.
        if (m := re.fullmatch(r"/statuses/([^/]+)", rest)) and method == "GET":
            return 200, self.page(list(reversed(self.state.statuses.get(m.group(1), []))), query)
        if (m := re.fullmatch(r"/commits/([^/]+)/statuses", rest)) and method == "GET":
            return 200, self.page(list(reversed(self.state.statuses.get(m.group(1), []))), query)
        if rest == "/releases" and method == "GET":
            # "List releases": "Only users with push access will receive listings for draft
            # releases."
            shown = [
                r for r in self.state.releases if who.may("contents", "write") or not r["draft"]
            ]
            return 200, self.page(list(reversed(shown)), query)
        return not_found

    @staticmethod
    def page(items: list[Any], query: dict[str, list[str]]) -> list[Any]:
        """`page` (from 1) and `per_page` (default 30, at most 100), as GitHub pages lists."""
        number = max(int(query.get("page", ["1"])[0]), 1)
        size = min(max(int(query.get("per_page", ["30"])[0]), 1), 100)
        return items[(number - 1) * size : number * size]

    def create_release(self, data: dict[str, Any]) -> tuple[int, Any]:
        tag = data.get("tag_name")
        if not isinstance(tag, str) or not tag:
            return 422, {
                "message": "Validation Failed",
                "errors": [{"field": "tag_name", "code": "missing_field"}],
            }
        if self.release(tag) is not None:
            return 422, {
                "message": "Validation Failed",
                "errors": [{"resource": "Release", "code": "already_exists", "field": "tag_name"}],
            }
        if len(data.get("body") or "") > MAX_RELEASE_BODY:
            return graph.body_too_long()
        rid = self.state.new_id()
        release = {
            "url": self.api(f"/releases/{rid}"),
            "assets_url": self.api(f"/releases/{rid}/assets"),
            "upload_url": f"{self.url}/uploads/repos/{self.repository}/releases/{rid}/assets{{?name,label}}",
            "html_url": f"https://github.com/{self.repository}/releases/tag/{tag}",
            "id": rid,
            "tag_name": tag,
            # An existing tag wins: GitHub ignores target_commitish then.
            "target_commitish": self.state.tags.get(tag, data.get("target_commitish", "main")),
            "name": data.get("name", tag),
            "body": data.get("body", ""),
            "draft": bool(data.get("draft", False)),
            "prerelease": bool(data.get("prerelease", False)),
            "make_latest": data.get("make_latest", "true"),
            "created_at": TIME,
            "published_at": TIME,
            "author": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"},
            "assets": [],
        }
        self.state.releases.append(release)
        graph.publish_tag(self, release)
        return 201, release

    def upload(
        self, rid: int, query: dict[str, list[str]], body: bytes, req: BaseHTTPRequestHandler
    ) -> tuple[int, Any]:
        release = next((r for r in self.state.releases if r["id"] == rid), None)
        name = query.get("name", [""])[0]
        if release is None:
            return 404, {"message": "Not Found"}
        if not name:
            return 422, {
                "message": "Validation Failed",
                "errors": [{"field": "name", "code": "missing"}],
            }
        if any(a["name"] == name for a in release["assets"]):
            return 422, {
                "message": "Validation Failed",
                "errors": [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}],
            }
        aid = self.state.new_id()
        asset = {
            "url": self.api(f"/releases/assets/{aid}"),
            "id": aid,
            "name": name,
            "label": query.get("label", [""])[0] or None,
            "content_type": req.headers.get("Content-Type", "application/octet-stream"),
            "state": "uploaded",
            "size": len(body),
            "download_count": 0,
            "created_at": TIME,
            "updated_at": TIME,
            "browser_download_url": f"https://github.com/{self.repository}/releases/download/{release['tag_name']}/{name}",
        }
        release["assets"].append(asset)
        self.state.assets[aid] = body
        return 201, asset

    def asset(self, method: str, aid: int, req: BaseHTTPRequestHandler) -> tuple[int, Any]:
        for release in self.state.releases:
            for asset in release["assets"]:
                if asset["id"] == aid:
                    if method == "DELETE":
                        release["assets"].remove(asset)
                        del self.state.assets[aid]
                        return 204, b""
                    if method == "GET" and req.headers.get("Accept") == "application/octet-stream":
                        # Where the content is, on the host the client reached (act's
                        # containers reach the double by another address than the tests).
                        host = req.headers.get("Host") or urlsplit(self.url).netloc
                        return 302, {"location": f"http://{host}/storage/assets/{aid}"}
                    if method == "GET":
                        return 200, asset
        return 404, {"message": "Not Found"}

    def stored(self, aid: int) -> tuple[int, Any]:
        if aid in self.state.assets:
            return 200, self.state.assets[aid]
        return 404, {"message": "Not Found"}

    def create_status(self, sha: str, data: dict[str, Any], who: Identity) -> tuple[int, Any]:
        state = data.get("state")
        if not SHA.fullmatch(sha) or state not in STATES:
            return 422, {
                "message": "Validation Failed",
                "errors": [{"field": "state", "code": "invalid"}],
            }
        if not self.has_commit(sha):
            return graph.no_commit(sha)
        status = {
            "url": self.api(f"/statuses/{sha}"),
            "id": self.state.new_id(),
            "state": state,
            "description": data.get("description"),
            "target_url": data.get("target_url"),
            "context": data.get("context") or "default",
            "created_at": TIME,
            "updated_at": TIME,
            "creator": dict(who.user),
        }
        self.state.statuses.setdefault(sha, []).append(status)
        return 201, status
