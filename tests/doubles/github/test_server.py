"""The GitHub double answers as GitHub does, and refuses what GitHub refuses."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from github import Auth, Github, GithubException

from tests.doubles.github.server import READ_ONLY, GitHubDouble

SHA = "a" * 40


def call(
    double: GitHubDouble,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = "t",  # noqa: S107
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{double.url}{path}", data=data, method=method)
    if token is not None:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            raw = answer.read()
            return answer.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def test_pygithub_creates_a_release_uploads_and_reads_an_asset() -> None:
    with GitHubDouble() as double:
        gh = Github(auth=Auth.Token("t"), base_url=double.url, retry=None)
        repo = gh.get_repo("acme/torch-builds")
        made = repo.create_git_release(
            tag="main-0123456789ab", name="n", message="notes", target_commitish=SHA
        )
        made.upload_asset_from_memory(
            b'{"x": 1}', 8, name="results.json", content_type="application/json"
        )
        again = repo.get_release("main-0123456789ab")
        (asset,) = again.get_assets()
        status, _headers, stream = asset.download_asset()
        assert status == 200 and b"".join(stream) == b'{"x": 1}'
        assert double.release("main-0123456789ab")["target_commitish"] == SHA
        with pytest.raises(GithubException) as taken:
            made.upload_asset_from_memory(b"2", 1, name="results.json")
        assert taken.value.status == 422
        with pytest.raises(GithubException) as missing:
            repo.get_release("nope")
        assert missing.value.status == 404


def test_refusals() -> None:
    with GitHubDouble() as double:
        repo = "/repos/acme/torch-builds"
        assert call(double, "GET", repo, token=None)[0] == 401
        assert call(double, "POST", f"{repo}/releases", {"tag_name": "t"})[0] == 201
        status, body = call(double, "POST", f"{repo}/releases", {"tag_name": "t"})
        assert status == 422 and body["errors"][0]["code"] == "already_exists"
        assert call(double, "POST", f"{repo}/statuses/{SHA}", {"state": "green"})[0] == 422
        assert call(double, "POST", f"{repo}/statuses/abc", {"state": "success"})[0] == 422
        assert (
            call(double, "POST", f"{repo}/statuses/{SHA}", {"state": "success", "context": "c"})[0]
            == 201
        )
        status, listed = call(double, "GET", f"{repo}/commits/{SHA}/statuses")
        assert status == 200 and [s["context"] for s in listed] == ["c"]
        assert call(double, "GET", "/repos/other/repo")[0] == 404
        for n in range(3):
            call(double, "POST", f"{repo}/statuses/{SHA}", {"state": "pending", "context": f"p{n}"})
        page2 = call(double, "GET", f"{repo}/commits/{SHA}/statuses?per_page=3&page=2")[1]
        assert [s["context"] for s in page2] == ["c"]


def test_the_server_stops_itself() -> None:
    double = GitHubDouble(lifetime=0.2)
    with double:
        double.timer.join(5)
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"{double.url}/repos/acme/torch-builds", timeout=2)


# --- identities, pull requests, environments, tags (issue 19) ------------------------------


def call_as(
    double: GitHubDouble, token: str, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    return call(double, method, path, body, token=token)


REPO = "/repos/acme/torch-builds"


def test_a_read_only_token_reads_but_never_writes() -> None:
    with GitHubDouble() as double:
        double.grant("ro", permissions=READ_ONLY)
        status, body = call_as(double, "ro", "POST", f"{REPO}/statuses/{SHA}", {"state": "success"})
        assert (status, body["message"]) == (403, "Resource not accessible by integration")
        assert call_as(double, "ro", "POST", f"{REPO}/releases", {"tag_name": "t"})[0] == 403
        assert call_as(double, "ro", "GET", f"{REPO}/commits/{SHA}/statuses")[0] == 200
        assert double.state.statuses == {} and double.state.releases == []


def test_a_status_records_the_identity_that_posted_it() -> None:
    with GitHubDouble() as double:
        double.grant("mallory", login="mallory", kind="User")
        call_as(double, "any", "POST", f"{REPO}/statuses/{SHA}", {"state": "success"})
        call_as(double, "mallory", "POST", f"{REPO}/statuses/{SHA}", {"state": "success"})
        creators = [s["creator"]["login"] for s in double.statuses(SHA)]
        assert creators == ["github-actions[bot]", "mallory"]


def test_unknown_commits_and_revoked_tokens_are_refused() -> None:
    with GitHubDouble() as double:
        double.know_commits(lambda sha: sha == SHA)
        other = "b" * 40
        status, body = call_as(
            double, "t", "POST", f"{REPO}/statuses/{other}", {"state": "success"}
        )
        assert (status, body["message"]) == (422, f"No commit found for SHA: {other}")
        assert call_as(double, "t", "GET", f"{REPO}/commits/{other}/pulls")[0] == 422
        assert call_as(double, "t", "GET", f"{REPO}/commits/{SHA}/pulls") == (200, [])
        double.revoke("old")
        assert call_as(double, "old", "GET", f"{REPO}/commits/{SHA}/pulls")[0] == 401


def test_pull_requests_associated_with_a_commit() -> None:
    with GitHubDouble() as double:
        commits = [f"{n:040x}" for n in range(1, 301)]
        squash = "f" * 40
        double.add_pull(3, head=commits[-1], commits=commits, merged=[squash])
        status, pulls = call_as(double, "t", "GET", f"{REPO}/commits/{squash}/pulls")
        assert status == 200 and [p["number"] for p in pulls] == [3]
        assert pulls[0]["head"]["sha"] == commits[-1] and "_commits" not in pulls[0]
        assert (
            call_as(double, "t", "GET", f"{REPO}/commits/{commits[0]}/pulls")[1][0]["number"] == 3
        )
        # At most 250 commits of a pull request, oldest first, paged.
        last = call_as(double, "t", "GET", f"{REPO}/pulls/3/commits?per_page=100&page=3")[1]
        assert [c["sha"] for c in last] == commits[200:250]
        assert call_as(double, "t", "GET", f"{REPO}/pulls/4")[0] == 404


def test_environments_need_actions_read_and_may_be_missing() -> None:
    with GitHubDouble() as double:
        double.add_environment("release", reviewers=2)
        status, env = call_as(double, "t", "GET", f"{REPO}/environments/release")
        assert status == 200 and len(env["protection_rules"][0]["reviewers"]) == 2
        assert call_as(double, "t", "GET", f"{REPO}/environments/staging")[0] == 404
        double.grant("no-actions", permissions={"statuses": "write"})
        assert call_as(double, "no-actions", "GET", f"{REPO}/environments/release")[0] == 403


def test_an_existing_tag_wins_over_target_commitish_and_a_release_makes_its_tag() -> None:
    with GitHubDouble() as double:
        double.add_tag("main-aaaaaaaaaaaa", "c" * 40)
        made = call_as(
            double,
            "t",
            "POST",
            f"{REPO}/releases",
            {"tag_name": "main-aaaaaaaaaaaa", "target_commitish": SHA},
        )[1]
        assert made["target_commitish"] == "c" * 40
        call_as(
            double, "t", "POST", f"{REPO}/releases", {"tag_name": "new", "target_commitish": SHA}
        )
        assert call_as(double, "t", "GET", f"{REPO}/git/ref/tags/new")[1]["object"]["sha"] == SHA
        draft = {"tag_name": "draft", "target_commitish": SHA, "draft": True}
        call_as(double, "t", "POST", f"{REPO}/releases", draft)
        assert call_as(double, "t", "GET", f"{REPO}/git/ref/tags/draft")[0] == 404


def test_a_release_body_over_125000_characters_is_refused() -> None:
    with GitHubDouble() as double:
        long = {"tag_name": "t", "body": "x" * 125_001}
        status, body = call_as(double, "t", "POST", f"{REPO}/releases", long)
        assert status == 422
        assert body["errors"][0]["message"] == "body is too long (maximum is 125000 characters)"
        made = call_as(double, "t", "POST", f"{REPO}/releases", {"tag_name": "t", "body": "ok"})[1]
        assert call_as(double, "t", "PATCH", f"{REPO}/releases/{made['id']}", long)[0] == 422
        assert double.release("t")["body"] == "ok"


def test_an_asset_is_its_json_or_with_octet_stream_a_redirect_to_its_content() -> None:
    """GitHub's "Get a release asset": JSON by default; with Accept: application/octet-stream
    the API "will either redirect the client to the location, or stream it directly"."""
    import http.client

    with GitHubDouble() as double:
        status, made = call(double, "POST", f"{REPO}/releases", {"tag_name": "main-0123456789ab"})
        assert status == 201
        upload = urllib.request.Request(
            f"{double.url}/uploads{REPO}/releases/{made['id']}/assets?name=r.json",
            data=b"[1]",
            method="POST",
            headers={"Authorization": "token t", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(upload, timeout=10) as answer:
            asset = json.loads(answer.read())
        status, meta = call(double, "GET", f"{REPO}/releases/assets/{asset['id']}")
        assert status == 200 and meta["name"] == "r.json" and meta["size"] == 3
        host = double.url.removeprefix("http://")
        connection = http.client.HTTPConnection(host, timeout=10)
        connection.request(
            "GET",
            f"{REPO}/releases/assets/{asset['id']}",
            headers={"Authorization": "token t", "Accept": "application/octet-stream"},
        )
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 302
        location = answer.getheader("Location") or ""
        connection.request("GET", location.removeprefix(f"http://{host}"))  # no token: signed
        content = connection.getresponse()
        assert (content.status, content.read()) == (200, b"[1]")
        connection.close()


def test_drafts_are_listed_only_to_a_token_that_may_push() -> None:
    with GitHubDouble() as double:
        double.grant("ro", permissions=READ_ONLY)
        call(double, "POST", f"{REPO}/releases", {"tag_name": "main-0123456789ab", "draft": True})
        assert len(call(double, "GET", f"{REPO}/releases")[1]) == 1
        assert call_as(double, "ro", "GET", f"{REPO}/releases") == (200, [])
