"""`ci-tools release` against a GitHub API faked with `responses` (bodies shaped like the
real API's, in tests/data). Runs the command in-process so `responses` sees its requests."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses
from responses import matchers

from ci_tools import cli
from ci_tools.base import github_api, github_failures, github_transient
from ci_tools.base.errors import FailedError, InputError
from ci_tools.commands import release as release_command
from tests.conftest import DATA

RESULTS = DATA / "results-cuda-12_9"
COMMIT = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
TAG = "cuda-12_9-1a2b3c4d5e6f"
ASSET = f"results-{TAG}.json"
TOKEN = "ghp_SeCrEt0123456789abcdefTOKEN"
API = "https://api.github.com"
REPO_URL = f"{API}/repos/acme/torch-builds"
RELEASE_ID = 184203311
RELEASE_URL = f"{REPO_URL}/releases/{RELEASE_ID}"
UPLOAD_URL = f"https://uploads.github.com/repos/acme/torch-builds/releases/{RELEASE_ID}/assets"
ASSET_URL = f"{REPO_URL}/releases/assets/211000001"


def _at(url: str) -> re.Pattern[str]:
    """`url` as PyGithub requests it: it spells out the default port, and adds queries."""
    host, _, path = url.partition("://")[2].partition("/")
    return re.compile(rf"https://{re.escape(host)}(:443)?/{re.escape(path)}(\?.*)?$")


def _plain(url: str) -> str:
    return url.split("?")[0].replace(":443/", "/")


def _body(data_file: str, /, **changes: Any) -> dict[str, Any]:
    text = (DATA / data_file).read_text(encoding="utf-8")
    text = text.replace('"TAG"', json.dumps(TAG)).replace("/TAG", f"/{TAG}")
    text = text.replace('"COMMIT"', json.dumps(COMMIT)).replace('"ASSET"', json.dumps(ASSET))
    text = text.replace("/ASSET", f"/{ASSET}")
    data: dict[str, Any] = json.loads(text)
    data.update(changes)
    return data


def _release(**changes: Any) -> dict[str, Any]:
    return _body("github-release.json", **changes)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retries wait through this list instead of sleeping."""
    waited: list[float] = []
    policy = dataclasses.replace(release_command.POLICY, sleep=waited.append)
    monkeypatch.setattr(release_command, "POLICY", policy)
    return waited


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, repo_root: Path) -> None:
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_API_URL", "GITHUB_REPOSITORY", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/torch-builds")
    monkeypatch.setenv("GITHUB_SHA", COMMIT)
    monkeypatch.chdir(repo_root)


@pytest.fixture
def api(env: None, sleeps: list[float]) -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def _run(
    capsys: pytest.CaptureFixture[str], *extra: str, results_dir: Path = RESULTS
) -> tuple[int, str, str]:
    code = cli.main(["release", "--branch", "cuda-12_9", "--results", str(results_dir), *extra])
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
    assert "Traceback" not in out + err
    return code, out, err


def _repo(mock: responses.RequestsMock, *, tag: bool = True) -> None:
    mock.get(_at(REPO_URL), json=_body("github-repo.json"))
    if not tag:
        return
    # The release's tag does not exist yet (`ship.target` asks before writing).
    mock.get(_at(f"{REPO_URL}/git/ref/tags/{TAG}"), status=404, json=_body("github-error-404.json"))


def _no_release_yet(mock: responses.RequestsMock) -> None:
    mock.get(
        _at(f"{REPO_URL}/releases/tags/{TAG}"), status=404, json=_body("github-error-404.json")
    )
    mock.get(_at(f"{REPO_URL}/releases"), json=[])


def _echo_patch(request: Any) -> tuple[int, dict[str, str], str]:
    sent = json.loads(request.body)
    return 200, {}, json.dumps(_release(**sent))


def _uploads(mock: responses.RequestsMock) -> None:
    mock.post(
        _at(UPLOAD_URL),
        status=201,
        json=_body("github-asset.json"),
        match=[matchers.query_param_matcher({"name": ASSET, "label": ""})],
    )


def _previous_asset(mock: responses.RequestsMock) -> None:
    """The release's results asset of an earlier run at the same commit, which the release
    reads to keep the variants that run recorded (none here)."""
    mock.get(
        _at(ASSET_URL),
        body=json.dumps({"commit": COMMIT, "variants": []}).encode(),
        content_type="application/octet-stream",
    )


def _sent(mock: responses.RequestsMock, method: str, url: str) -> list[dict[str, Any]]:
    return [
        json.loads(c.request.body)
        for c in mock.calls
        if c.request.method == method and _plain(c.request.url) == url
    ]


def _methods(mock: responses.RequestsMock) -> list[str]:
    return [f"{c.request.method} {_plain(c.request.url)}" for c in mock.calls]


def test_creates_release_with_notes_and_asset(api: responses.RequestsMock, capsys) -> None:  # type: ignore[no-untyped-def]
    _repo(api)
    _no_release_yet(api)
    api.post(_at(f"{REPO_URL}/releases"), status=201, json=_release(body="created"))
    api.get(_at(f"{RELEASE_URL}/assets"), json=[])
    _uploads(api)

    code, out, err = _run(capsys)

    assert code == 1, (
        err
    )  # the fixture results hold failures: the release is made, the exit says so
    (created,) = _sent(api, "POST", f"{REPO_URL}/releases")
    assert created["tag_name"] == TAG
    assert created["target_commitish"] == COMMIT
    assert created["draft"] is False
    assert created["make_latest"] == "false"  # only main's release is the latest
    assert "PyTorch 2.9.1" in created["name"]
    assert "flox install acme/pytorch-python313-cuda12_9-sm90-avx512" in created["body"]
    assert f"created release {TAG}" in out
    assert "torchvision-python313-cuda12_9-sm90-avx512 (publish failed)" in err
    upload = next(c.request for c in api.calls if _plain(c.request.url) == UPLOAD_URL)
    assert upload.headers["Content-Type"] == "application/json"
    summary = json.loads(upload.body.read() if hasattr(upload.body, "read") else upload.body)
    assert summary["tag"] == TAG and summary["counts"]["published"] == 1


def test_rerun_updates_the_same_release_and_replaces_asset(
    api: responses.RequestsMock,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    _repo(api)
    api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), json=_release())
    api.add_callback(responses.PATCH, _at(RELEASE_URL), callback=_echo_patch)
    api.get(_at(f"{RELEASE_URL}/assets"), json=[_body("github-asset.json")])
    _previous_asset(api)
    api.delete(_at(ASSET_URL), status=204)
    _uploads(api)

    code, out, _ = _run(capsys)

    assert code == 1
    assert not _sent(api, "POST", f"{REPO_URL}/releases")
    (patched,) = _sent(api, "PATCH", RELEASE_URL)
    assert patched["draft"] is False and patched["tag_name"] == TAG
    methods = _methods(api)
    assert methods.index(f"DELETE {ASSET_URL}") < methods.index(f"POST {UPLOAD_URL}")
    assert f"updated release {TAG}" in out


def test_draft_is_found_by_listing_and_stays_a_draft(
    api: responses.RequestsMock,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    _repo(api)
    api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), status=404, json=_body("github-error-404.json"))
    other = _release(id=1, tag_name="main-000000000000", url=f"{REPO_URL}/releases/1")
    api.get(_at(f"{REPO_URL}/releases"), json=[other, _release(draft=True, published_at=None)])
    api.add_callback(responses.PATCH, _at(RELEASE_URL), callback=_echo_patch)
    api.get(_at(f"{RELEASE_URL}/assets"), json=[])
    _uploads(api)

    code, out, _ = _run(capsys)

    assert code == 1
    assert not _sent(api, "POST", f"{REPO_URL}/releases")
    (patched,) = _sent(api, "PATCH", RELEASE_URL)
    assert patched["draft"] is True
    assert "(kept as draft)" in out


def test_502_then_success_retries_once(
    api: responses.RequestsMock,
    sleeps: list[float],
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    _repo(api)
    _no_release_yet(api)
    api.post(_at(f"{REPO_URL}/releases"), status=502, json=_body("github-error-502.json"))
    api.post(_at(f"{REPO_URL}/releases"), status=201, json=_release())
    api.get(_at(f"{RELEASE_URL}/assets"), json=[])
    _uploads(api)

    code, out, _ = _run(capsys)

    assert code == 1
    # Two POSTs in all: PyGithub did not retry on its own under ours.
    assert len(_sent(api, "POST", f"{REPO_URL}/releases")) == 2
    assert len(sleeps) == 1
    assert "HTTP 502" in out


def test_422_already_exists_after_5xx_updates_instead(
    api: responses.RequestsMock,
    sleeps: list[float],
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    _repo(api)
    # The first lookup misses; the POST that timed out on our side did create the release.
    api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), status=404, json=_body("github-error-404.json"))
    api.get(_at(f"{REPO_URL}/releases"), json=[])
    api.post(_at(f"{REPO_URL}/releases"), status=504, json=_body("github-error-502.json"))
    api.post(
        _at(f"{REPO_URL}/releases"), status=422, json=_body("github-error-422-already-exists.json")
    )
    api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), json=_release())
    api.add_callback(responses.PATCH, _at(RELEASE_URL), callback=_echo_patch)
    api.get(_at(f"{RELEASE_URL}/assets"), json=[])
    _uploads(api)

    code, out, _ = _run(capsys)

    assert code == 1
    assert len(_sent(api, "POST", f"{REPO_URL}/releases")) == 2
    assert len(_sent(api, "PATCH", RELEASE_URL)) == 1
    assert "already exists" in out


def test_asset_upload_and_delete_retried_after_5xx(
    api: responses.RequestsMock,
    sleeps: list[float],
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    _repo(api)
    api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), json=_release())
    api.add_callback(responses.PATCH, _at(RELEASE_URL), callback=_echo_patch)
    asset = _body("github-asset.json")
    # The old asset: its DELETE answers 502 but went through, so the retry meets 404.
    api.get(_at(f"{RELEASE_URL}/assets"), json=[asset])
    _previous_asset(api)
    api.delete(_at(ASSET_URL), status=502, json=_body("github-error-502.json"))
    api.delete(_at(ASSET_URL), status=404, json=_body("github-error-404.json"))
    # The upload answers 502 but landed, so the retry meets 422 already_exists ...
    api.post(_at(UPLOAD_URL), status=502, json=_body("github-error-502.json"))
    api.post(_at(UPLOAD_URL), status=422, json=_body("github-error-422-already-exists.json"))
    # ... and the asset it made is deleted and uploaded once more.
    api.get(_at(f"{RELEASE_URL}/assets"), json=[asset])
    api.delete(_at(ASSET_URL), status=204)
    api.post(_at(UPLOAD_URL), status=201, json=asset)

    code, out, _ = _run(capsys)

    assert code == 1
    assert f"attached {ASSET}" in out
    assert len(sleeps) == 2
    assert [m.split(" ")[0] for m in _methods(api) if "assets" in m] == [
        "GET",  # list, and
        "GET",  # read the previous run's results asset (kept variants)
        "GET",
        "DELETE",
        "DELETE",
        "POST",
        "POST",
        "GET",
        "DELETE",
        "POST",
    ]


def test_secondary_rate_limit_waits_retry_after(
    api: responses.RequestsMock,
    sleeps: list[float],
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    api.get(
        _at(REPO_URL),
        status=403,
        json=_body("github-error-403-secondary-rate-limit.json"),
        headers={"Retry-After": "37"},
    )
    _repo(api)
    _no_release_yet(api)
    api.post(_at(f"{REPO_URL}/releases"), status=201, json=_release())
    api.get(_at(f"{RELEASE_URL}/assets"), json=[])
    _uploads(api)

    code, _, _ = _run(capsys)

    assert code == 1
    assert sleeps == [37.0]


def test_bad_token_is_exit_2_without_traceback_or_token(
    api: responses.RequestsMock,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    api.get(_at(REPO_URL), status=401, json=_body("github-error-401.json"))
    code, _, err = _run(capsys)
    assert code == 2
    assert "GitHub rejected the token" in err and "GITHUB_TOKEN" in err
    assert len(api.calls) == 1


def test_unknown_repository_is_exit_2(api: responses.RequestsMock, capsys) -> None:  # type: ignore[no-untyped-def]
    api.get(_at(REPO_URL), status=404, json=_body("github-error-404.json"))
    code, _, err = _run(capsys)
    assert code == 2
    assert "repository acme/torch-builds not found" in err


def test_enterprise_api_url_is_used(
    api: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example.com/api/v3/")
    api.get(
        _at("https://ghe.example.com/api/v3/repos/acme/torch-builds"),
        status=404,
        json=_body("github-error-404.json"),
    )
    code, _, err = _run(capsys)
    assert code == 2
    assert "https://ghe.example.com/api/v3" in err


def test_dry_run_makes_no_write_call(api: responses.RequestsMock, capsys) -> None:  # type: ignore[no-untyped-def]
    _repo(api)
    api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), json=_release())
    api.get(_at(f"{RELEASE_URL}/assets"), json=[_body("github-asset.json")])
    _previous_asset(api)

    code, out, _ = _run(capsys, "--dry-run")

    assert code == 1
    assert {c.request.method for c in api.calls} == {"GET"}
    assert f"would update release {TAG}" in out
    assert f"would replace asset {ASSET}" in out
    assert "| `pytorch-python313-cpu-avx2` |" in out


def test_all_published_exits_0(
    api: responses.RequestsMock,
    tmp_path: Path,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    only = "pytorch-python313-cuda12_9-sm90-avx512.result.json"
    (tmp_path / "r").mkdir()
    shutil.copy(RESULTS / only, tmp_path / "r" / only)
    _repo(api)
    _no_release_yet(api)
    api.post(_at(f"{REPO_URL}/releases"), status=201, json=_release())
    api.get(_at(f"{RELEASE_URL}/assets"), json=[])
    _uploads(api)

    code, out, _ = _run(capsys, results_dir=tmp_path / "r")

    assert code == 0
    assert "1 published" in out


def test_error_messages_never_carry_the_token() -> None:
    from github import GithubException

    settings = github_api.Settings(token=TOKEN, api_url=API, repository="acme/torch-builds")
    leaky = GithubException(500, {"message": f"echo {TOKEN}"}, {})
    translated = github_failures.translate("create release", leaky, settings)
    assert isinstance(translated, FailedError)
    assert TOKEN not in str(translated)
    assert TOKEN not in repr(settings)


def test_ratelimit_reset_header_sets_the_wait() -> None:
    from github import GithubException

    exc = GithubException(
        403,
        {"message": "API rate limit exceeded for installation ID 1."},
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000"},
    )
    assert github_transient.is_transient(exc)
    assert github_transient.server_delay(exc, now=lambda: 990.0) == 11.0


def test_permission_denied_is_not_retried() -> None:
    from github import GithubException

    exc = GithubException(403, {"message": "Resource not accessible by integration"}, {})
    assert not github_transient.is_transient(exc)
    settings = github_api.Settings(token=TOKEN, api_url=API, repository="acme/torch-builds")
    assert isinstance(github_failures.translate("create release", exc, settings), InputError)


def test_gh_token_is_read_when_github_token_is_absent() -> None:
    settings = github_api.settings_from_env(
        {"GH_TOKEN": TOKEN, "GITHUB_REPOSITORY": "acme/torch-builds"}
    )
    assert settings.token == TOKEN and settings.api_url == API


def _list_published(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = cli.main(["release", "--branch", "cuda-12_9", "--list-published", *extra])
    out, err = capsys.readouterr()
    assert TOKEN not in out + err and "Traceback" not in out + err
    return code, out, err


def test_list_published_prints_what_this_commits_release_published_to_the_org(
    api: responses.RequestsMock,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    def entry(name: str, outcome: str) -> dict[str, Any]:
        record = json.loads((RESULTS / f"{name}.result.json").read_text(encoding="utf-8"))
        return {"variant": name, "outcome": outcome, "record": record}

    asset = {
        "commit": COMMIT,
        "variants": [
            entry("pytorch-python313-cuda12_9-sm90-avx512", "published"),
            entry("torchvision-python313-cuda12_9-sm90-avx512", "publish failed"),
            entry("pytorch-python313-cpu-avx2", "passed, not published"),
            {"variant": "pytorch-python313-cuda12_9-sm75-avx2", "outcome": "not selected",
             "record": None},
        ],
    }  # fmt: skip
    for _ in range(2):
        _repo(api, tag=False)
        api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), json=_release())
        api.get(_at(f"{RELEASE_URL}/assets"), json=[_body("github-asset.json")])
        api.get(_at(ASSET_URL), body=json.dumps(asset).encode(), content_type="application/json")

    code, out, _ = _list_published(capsys, "--org", "acme")
    assert (code, out) == (0, "pytorch-python313-cuda12_9-sm90-avx512\n")
    # Published to acme is not published to another org.
    code, out, _ = _list_published(capsys, "--org", "other")
    assert (code, out) == (0, "")
    assert not _sent(api, "PATCH", RELEASE_URL) and not _sent(api, "POST", f"{REPO_URL}/releases")


def test_list_published_without_a_release_prints_nothing(
    api: responses.RequestsMock,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    _repo(api, tag=False)
    _no_release_yet(api)
    assert _list_published(capsys, "--org", "acme")[:2] == (0, "")


def test_list_published_refuses_an_asset_of_another_commit(
    api: responses.RequestsMock,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    _repo(api, tag=False)
    api.get(_at(f"{REPO_URL}/releases/tags/{TAG}"), json=_release())
    api.get(_at(f"{RELEASE_URL}/assets"), json=[_body("github-asset.json")])
    api.get(_at(ASSET_URL), body=json.dumps({"commit": "f" * 40, "variants": []}).encode())
    code, out, err = _list_published(capsys, "--org", "acme")
    assert code == 2 and out == ""
    assert f"the asset is of commit {'f' * 40}" in err


def test_list_published_needs_an_org_and_a_release_needs_results(
    env: None,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    code, _, err = _list_published(capsys)
    assert code == 2 and "--list-published needs --org ORG" in err
    code = cli.main(["release", "--branch", "cuda-12_9"])
    assert code == 2 and "--results DIR is required" in capsys.readouterr().err
