"""The GitHub double answers as GitHub does, and refuses what GitHub refuses."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from github import Auth, Github, GithubException

from tests.doubles.github.server import GitHubDouble

SHA = "a" * 40


def call(
    double: GitHubDouble, method: str, path: str, body: Any = None, token: bool = True
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{double.url}{path}", data=data, method=method)
    if token:
        request.add_header("Authorization", "token t")
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
        assert call(double, "GET", repo, token=False)[0] == 401
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
