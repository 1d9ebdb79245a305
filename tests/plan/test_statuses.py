"""Rebuild until green: `ci-tools mark-green` and `ci-tools matrix --until-green` against
GitHub's commit-statuses API faked with `responses`, on a real git repository.

The fake keeps statuses per commit and answers as the REST API does (GitHub REST
"Commit statuses": `POST /repos/{owner}/{repo}/statuses/{sha}` and the list of a commit's
statuses, newest first, `per_page` at most 100; body shapes from PyGithub's replay data
`tests/ReplayData/CommitStatus.setUp.txt`, here tests/data/github-status.json). Rules it
enforces, each with a test below that shows it refusing:
* `state` is required and one of error, failure, pending, success (the request schema of
  "Create a commit status"): else 422;
* a SHA the repository does not have: 422 ("No commit found for SHA");
* at most 1000 statuses per SHA and context ("Create a commit status" note): else 422;
* no token: 401;
* a token without `statuses: write` (a fork's pull request): 403 "Resource not accessible by
  integration", GitHub's answer to a GITHUB_TOKEN that lacks the permission.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import responses

from ci_tools import cli
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Check, ResultRecord, Route, Status
from ci_tools.commands import mark_green as mark_green_command
from ci_tools.plan import schedule
from tests.conftest import DATA
from tests.gitutil import commit_all, git, init, write

TOKEN = "ghp_SeCrEt0123456789abcdefTOKEN"
READ_ONLY = "ghp_ReadOnly0123456789abcdefTOKEN"
API = "https://ghe.example.com/api/v3"  # an Enterprise server: GITHUB_API_URL is honoured
OWNER_REPO = "acme/torch-builds"
STATUSES = re.compile(rf"https://ghe\.example\.com(:443)?/api/v3/repos/{OWNER_REPO}/statuses/(\w+)")

BASE = "pytorch-python313-cuda12_8-sm61-avx"
DEP = "torchvision-python313-cuda12_8-sm61-avx"
CPU = "pytorch-python313-cpu-avx2"
GPU_STACK = "py313-sm61-avx"
CPU_STACK = "py313-cpu-avx2"
TORCH = "{ }:\nlet s = ''\n  export X=1\n''; in s\n"


class StatusesApi:
    """GitHub's statuses endpoints for one repository, in memory."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.by_sha: dict[str, list[dict[str, Any]]] = {}
        self.gets = 0
        self.next_id = 1

    def _known(self, sha: str) -> bool:
        try:
            return git(self.repo, "cat-file", "-t", sha) == "commit"
        except subprocess.CalledProcessError:
            return False

    def _authorised(self, request: Any) -> bool:
        return request.headers.get("Authorization") in (f"token {TOKEN}", f"token {READ_ONLY}")

    def post(self, request: Any) -> tuple[int, dict[str, str], str]:
        if not self._authorised(request):
            return 401, {}, json.dumps({"message": "Requires authentication"})
        if request.headers.get("Authorization") == f"token {READ_ONLY}":
            return 403, {}, json.dumps({"message": "Resource not accessible by integration"})
        sha = STATUSES.match(request.url)[2]  # type: ignore[index]
        body = json.loads(request.body)
        if body.get("state") not in ("error", "failure", "pending", "success"):
            return 422, {}, json.dumps({"message": "Validation Failed"})
        if not self._known(sha):
            return 422, {}, json.dumps({"message": f"No commit found for SHA: {sha}"})
        context = body.get("context", "default")
        same = [s for s in self.by_sha.get(sha, []) if s["context"].lower() == context.lower()]
        if len(same) >= 1000:
            return 422, {}, json.dumps({"message": "Validation Failed"})
        status = json.loads((DATA / "github-status.json").read_text(encoding="utf-8"))
        status.update(
            id=self.next_id,
            state=body["state"],
            description=body.get("description"),
            context=context,
            target_url=body.get("target_url"),
        )
        self.next_id += 1
        self.by_sha.setdefault(sha, []).insert(0, status)  # newest first
        return 201, {}, json.dumps(status)

    def get(self, request: Any) -> tuple[int, dict[str, str], str]:
        if not self._authorised(request):
            return 401, {}, json.dumps({"message": "Requires authentication"})
        self.gets += 1
        sha = STATUSES.match(request.url)[2]  # type: ignore[index]
        query = parse_qs(urlparse(request.url).query)
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        items = self.by_sha.get(sha, [])[(page - 1) * per_page : page * per_page]
        return 200, {}, json.dumps(items)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = init(tmp_path / "builds", "pytorch-2.8-python313")
    write(root, f".flox/pkgs/{BASE}.nix", TORCH)
    write(root, f".flox/pkgs/{DEP}.nix", f"{{ }}:\nimport ./{BASE}.nix {{ }}\n")
    write(root, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", "Y=1"))
    write(root, "README.md", "# builds\n")
    commit_all(root, "recipes")
    monkeypatch.chdir(root)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ACTIONS", "GITHUB_SHA", "GITHUB_BASE_REF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", OWNER_REPO)
    monkeypatch.setenv("GITHUB_API_URL", API)
    return root


@pytest.fixture
def github(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StatusesApi]:
    fake = StatusesApi(repo)
    waits: list[float] = []
    for module in (schedule, mark_green_command):
        monkeypatch.setattr(
            module, "POLICY", dataclasses.replace(module.POLICY, sleep=waits.append)
        )
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.POST, STATUSES, callback=fake.post)
        mock.add_callback(responses.GET, STATUSES, callback=fake.get)
        yield fake


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, str], str]:
    """stack -> fingerprint of what `matrix --until-green` schedules, and its stderr."""
    assert cli.main(["matrix", "--until-green", *args]) == 0
    out = capsys.readouterr()
    return {e["name"]: e["fingerprint"] for e in json.loads(out.out)["include"]}, out.err


def proven(
    root: Path, checks: tuple[Check, ...] = (Check(name="cpu-mlp", status=Status.PASSED),)
) -> Path:
    """A results folder whose one record proves its variant: its checks ran."""
    folder = root / "proven-results"
    record = ResultRecord(
        variant=CPU,
        package="pytorch",
        branch="main",
        platform="x86_64-linux",
        build=BuildOutcome(status=Status.PASSED, seconds=1.0),
        test=results.TestOutcome(
            status=results.test_status(checks), checks=checks, route=Route(scope="cpu")
        ),
    )
    results.save(record, results.result_path(folder, CPU))
    return folder


def mark_green(*args: str, results_dir: Path) -> int:
    return cli.main(["mark-green", *args, "--results", str(results_dir)])


def green(capsys: pytest.CaptureFixture[str], stack: str, fingerprint: str, repo: Path) -> None:
    sha = git(repo, "rev-parse", "HEAD")
    code = mark_green(
        "--stack",
        stack,
        "--fingerprint",
        fingerprint,
        "--commit",
        sha,
        results_dir=proven(repo.parent),
    )
    assert code == 0
    assert TOKEN not in capsys.readouterr().out


def docs_push(repo: Path, text: str) -> None:
    write(repo, "README.md", text)
    commit_all(repo, "docs")


def test_failed_stack_is_rescheduled_until_green(
    repo: Path, github: StatusesApi, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = plan(capsys)
    assert set(first) == {GPU_STACK, CPU_STACK}
    # The CPU stack passes and is recorded; the GPU stack fails (nothing recorded).
    green(capsys, CPU_STACK, first[CPU_STACK], repo)
    docs_push(repo, "# builds\nmore\n")
    second, _ = plan(capsys)
    assert second == {GPU_STACK: first[GPU_STACK]}
    docs_push(repo, "# builds\neven more\n")
    assert plan(capsys)[0] == {GPU_STACK: first[GPU_STACK]}  # every push, until green
    green(capsys, GPU_STACK, second[GPU_STACK], repo)
    docs_push(repo, "# builds\ndone\n")
    third, err = plan(capsys)
    assert third == {}
    assert "2 of 2 stacks are green" in err
    status = github.by_sha[git(repo, "rev-parse", "HEAD~1")][0]
    assert (status["context"], status["description"], status["state"]) == (
        f"ci-tools/{GPU_STACK}",
        f"inputs {second[GPU_STACK]}",
        "success",
    )


def test_revert_to_a_green_state_schedules_nothing(
    repo: Path, github: StatusesApi, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = plan(capsys)
    for stack, fingerprint in first.items():
        green(capsys, stack, fingerprint, repo)
    write(repo, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", "Y=2"))
    commit_all(repo, "change the cpu recipe")
    changed, _ = plan(capsys)
    assert set(changed) == {CPU_STACK}
    git(repo, "revert", "--no-edit", "HEAD")
    assert plan(capsys)[0] == {}


def test_docs_push_after_green_needs_one_request(
    repo: Path, github: StatusesApi, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = plan(capsys)
    for stack, fingerprint in first.items():
        green(capsys, stack, fingerprint, repo)
    docs_push(repo, "# builds\nagain\n")
    before = github.gets
    assert plan(capsys)[0] == {}
    assert github.gets - before == 2  # HEAD (nothing yet), then its parent: all answered


def test_lookback_is_bounded_by_commits_and_calls(
    repo: Path, github: StatusesApi, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = plan(capsys)
    for stack, fingerprint in first.items():
        green(capsys, stack, fingerprint, repo)
    for n in range(3):
        docs_push(repo, f"# builds {n}\n")
    before = github.gets
    scheduled, err = plan(capsys, "--max-api-calls", "2")
    assert set(scheduled) == {GPU_STACK, CPU_STACK}  # not found within 2 calls: built again
    assert github.gets - before == 2
    assert "stopped at --max-api-calls 2" in err
    assert set(plan(capsys, "--lookback", "3")[0]) == {GPU_STACK, CPU_STACK}
    assert plan(capsys, "--lookback", "4")[0] == {}


def test_without_a_token_falls_back_to_since_with_a_notice(
    repo: Path,
    github: StatusesApi,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    docs_push(repo, "# builds\nx\n")
    scheduled, err = plan(capsys, "--since", "HEAD~1")
    assert scheduled == {}
    assert "no GitHub token" in err and "scheduling by --since HEAD~1" in err
    assert github.gets == 0
    everything, err = plan(capsys)
    assert set(everything) == {GPU_STACK, CPU_STACK}
    assert "scheduling by the full matrix" in err


def test_a_permanent_api_error_falls_back_with_a_warning(
    repo: Path,
    github: StatusesApi,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_wrong")
    scheduled, err = plan(capsys, "--since", "HEAD")
    assert scheduled == {}
    assert "cannot read the green records" in err and "ghp_wrong" not in err


# --- the double refuses what GitHub refuses ---------------------------------------------------


def test_mark_green_on_an_unknown_commit_is_refused(
    repo: Path, github: StatusesApi, capsys: pytest.CaptureFixture[str]
) -> None:
    code = mark_green(
        "--stack", CPU_STACK, "--fingerprint", "0" * 32, "--commit", "1" * 40,
        results_dir=proven(repo.parent),
    )  # fmt: skip
    assert code == 1
    assert "No commit found for SHA" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("checks", "says"),
    [
        ((), "unproven"),
        ((Check(name="cpu-mlp", status=Status.SKIPPED),), "unproven"),
        ((Check(name="cpu-mlp", status=Status.FAILED),), "test failed: cpu-mlp"),
    ],
)
def test_a_stack_whose_checks_proved_nothing_is_never_marked(
    repo: Path,
    github: StatusesApi,
    capsys: pytest.CaptureFixture[str],
    checks: tuple[Check, ...],
    says: str,
) -> None:
    sha = git(repo, "rev-parse", "HEAD")
    code = mark_green(
        "--stack", CPU_STACK, "--fingerprint", "0" * 32, "--commit", sha,
        results_dir=proven(repo.parent, checks),
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "not marked green" in err and says in err
    assert github.by_sha == {}


def test_the_double_refuses_a_bad_state_and_a_missing_token(
    repo: Path, github: StatusesApi
) -> None:
    import requests

    sha = git(repo, "rev-parse", "HEAD")
    url = f"{API}/repos/{OWNER_REPO}/statuses/{sha}"
    headers = {"Authorization": f"token {TOKEN}"}
    assert (
        requests.post(url, json={"state": "green"}, headers=headers, timeout=5).status_code == 422
    )
    assert requests.post(url, json={}, headers=headers, timeout=5).status_code == 422
    assert requests.post(url, json={"state": "success"}, timeout=5).status_code == 401
    for _ in range(1000):
        github.by_sha.setdefault(sha, []).append({"context": "x"})
    assert (
        requests.post(
            url, json={"state": "success", "context": "X"}, headers=headers, timeout=5
        ).status_code
        == 422
    )


def test_mark_green_without_statuses_write_says_which_permission(
    repo: Path,
    github: StatusesApi,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", READ_ONLY)
    sha = git(repo, "rev-parse", "HEAD")
    code = mark_green(
        "--stack", CPU_STACK, "--fingerprint", "0" * 32, "--commit", sha,
        results_dir=proven(repo.parent),
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "statuses: write" in err and READ_ONLY not in err
    assert github.by_sha == {}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--stack", "a b", "--fingerprint", "0" * 32], "is not a stack name"),
        (["--stack", "py313", "--fingerprint", "xyz"], "is not a fingerprint"),
        (["--stack", "py313", "--fingerprint", "0" * 32, "--commit", "HEAD"], "full commit id"),
    ],
)
def test_mark_green_validates_its_arguments(
    repo: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert mark_green(*args, results_dir=proven(repo.parent)) == 2
    assert says in capsys.readouterr().err


def test_a_pull_requests_merge_commit_reads_the_pull_requests_statuses(
    repo: Path, github: StatusesApi, capsys: pytest.CaptureFixture[str]
) -> None:
    base = git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    git(repo, "checkout", "-q", "-b", "fix")
    write(repo, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", "Y=3"))
    commit_all(repo, "fix the cpu recipe")
    head, _ = plan(capsys)
    for stack, fingerprint in head.items():
        green(capsys, stack, fingerprint, repo)  # on the pull request's head commit
    git(repo, "checkout", "-q", base)
    docs_push(repo, "# builds\nmeanwhile\n")
    # GitHub's refs/pull/N/merge: the base branch's head merged with the pull request's.
    git(repo, "merge", "-q", "--no-ff", "--no-edit", "fix")
    git(repo, "checkout", "-q", "--detach")
    assert plan(capsys, "--branch", base)[0] == {}
