"""`ci-tools page --from-releases`: one site for every branch, each branch's published variants
from its newest releases (the newest record of a variant wins), against the GitHub double (issue 28 item 5).

GitHub facts relied on (modelled by the double, tests/doubles/github): "List releases" lists
newest first, a page of at most 100, drafts only to a token that may push; "Get a release
asset" with Accept: application/octet-stream redirects (302) to the content; a published
release creates its missing tag at `target_commitish` ("Create a release").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from ci_tools import cli
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, PublishOutcome, PublishStatus, ResultRecord
from ci_tools.catalog import variants
from ci_tools.catalog.model import Catalog
from ci_tools.commands import page as page_command
from ci_tools.ship import release
from tests import proven
from tests.commands.test_page import page_data
from tests.doubles.github.server import READ_ONLY, GitHubDouble

TOKEN = "ghs_PageToken0123456789"
MAIN_OLD, MAIN, CUDA = ("a" * 40, "b" * 40, "c" * 40)


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch, repo_root: Path) -> Iterator[GitHubDouble]:
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/torch-builds")
    policy = dataclasses.replace(page_command.POLICY, sleep=lambda _s: None)
    monkeypatch.setattr(page_command, "POLICY", policy)
    monkeypatch.chdir(repo_root)
    with GitHubDouble(lifetime=300) as github:
        github.grant(TOKEN, permissions=READ_ONLY)  # the page job's `contents: read`
        monkeypatch.setenv("GITHUB_API_URL", github.url)
        yield github


def _record(name: str, branch: str, commit: str, *, published: bool = True) -> ResultRecord:
    checks = proven.ran(proven.repo_expect(branch, name))  # as `ci-tools test` records them
    status = PublishStatus.PUBLISHED if published else PublishStatus.FAILED
    return ResultRecord(
        variant=name,
        package=name.split("-", 1)[0],
        branch=branch,
        platform="x86_64-linux",
        commit=commit,
        build=BuildOutcome(status=results.Status.PASSED, seconds=1.0),
        test=results.TestOutcome(status=results.Status.PASSED, checks=checks),
        publish=PublishOutcome(status=status, org="acme"),
    )


def _linux(catalog: Catalog, branch: str) -> list[str]:
    return [v.name for v in variants.expand(catalog, branch) if v.platform.value == "x86_64-linux"]


def _asset(catalog: Catalog, branch: str, commit: str, records: list[ResultRecord]) -> Any:
    """What `ci-tools release` attaches (`release.summary`)."""
    notes = release.build_notes(
        branch=catalog.branch(branch),
        variants=variants.expand(catalog, branch),
        records=records,
        commit=commit,
        org="acme",
    )
    return release.summary(notes, records)


def _publish(double: GitHubDouble, branch: str, commit: str, asset: Any) -> str:
    """A release as `ci-tools release` makes it, through the double's API (a write token)."""
    tag = release.tag_for(branch, commit)
    double.grant("writer")
    repo = Github(auth=Auth.Token("writer"), base_url=double.url, retry=None).get_repo(
        "acme/torch-builds"
    )
    made = repo.create_git_release(tag, name=tag, message="notes", target_commitish=commit)
    data = json.dumps(asset).encode()
    made.upload_asset_from_memory(
        data, len(data), name=release.asset_name(tag), content_type="application/json"
    )
    return tag


def _page(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> tuple[int, str]:
    code = cli.main(["page", "--out", str(out), "--org", "acme", *args])
    said = capsys.readouterr()
    assert TOKEN not in said.out + said.err and "Traceback" not in said.err
    return code, said.out + said.err


def test_every_branch_from_its_newest_releases_a_tampered_one_left_out(
    double: GitHubDouble, catalog: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, third = _linux(catalog, "main")[:3]
    cuda = _linux(catalog, "cuda-12_9")[0]
    old = [_record(third, "main", MAIN_OLD)]
    _publish(double, "main", MAIN_OLD, _asset(catalog, "main", MAIN_OLD, old))
    new = [_record(first, "main", MAIN), _record(second, "main", MAIN)]
    _publish(double, "main", MAIN, _asset(catalog, "main", MAIN, new))
    # Its record claims another commit than the asset and its tag: copied from elsewhere.
    tampered = _asset(catalog, "cuda-12_9", CUDA, [_record(cuda, "cuda-12_9", CUDA)])
    entry = next(e for e in tampered["variants"] if e["variant"] == cuda)
    entry["record"]["commit"] = MAIN
    cuda_tag = _publish(double, "cuda-12_9", CUDA, tampered)
    # This run's record of `second` (its publish failed this time) wins over the release's.
    mine = tmp_path / "results"
    record = _record(second, "main", MAIN, published=False)
    results.save(record, results.result_path(mine, second))
    double.state.requests.clear()

    code, said = _page(capsys, tmp_path / "site", "--from-releases", "--results", str(mine))
    assert code == 0, said
    records = page_data(tmp_path / "site" / "index.html")["records"]
    assert records[f"main/{first}"]["org"] == "acme"
    assert records[f"main/{second}"]["org"] is None
    # A variant only an older release published is still installed from FloxHub: the older
    # release's record shows it; a newer release's record of a variant wins.
    assert records[f"main/{third}"]["org"] == "acme"
    assert not [k for k in records if k.startswith("cuda-12_9/")]
    assert f"release {cuda_tag}: left out, not believed" in said
    assert f"the record of {cuda} names commit {MAIN}" in said
    assert "branch cuda-13_0: no release among the newest" in said
    # Bounded: the repository, one page of releases, then per release read its tag, its
    # assets and the download (a redirect and the content): main's two, cuda-12_9's one.
    assert len(double.state.requests) <= 17, double.state.requests


def test_without_a_token_the_page_is_built_from_the_records_with_a_notice(
    double: GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    code, said = _page(capsys, tmp_path, "--from-releases")
    assert code == 0, said
    assert "--from-releases: no GitHub token" in said
    assert "records only" in said and (tmp_path / "index.html").is_file()
    assert double.state.requests == []


def test_without_github_the_page_is_built_from_the_records_with_a_notice(
    double: GitHubDouble,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = double.url
    double.stop()  # nothing answers there any more
    monkeypatch.setenv("GITHUB_API_URL", url)
    code, said = _page(capsys, tmp_path, "--from-releases")
    assert code == 0, said
    assert "--from-releases: GitHub:" in said and "records only" in said
    assert (tmp_path / "index.html").is_file()
