"""`ci-tools release` against the GitHub API double: a release that means what it says
(issue 19 item 5).

GitHub facts relied on (each modelled and refused by the double, tests/doubles/github):
* "Create a release": `target_commitish` is "Unused if the Git tag already exists"; a
  published release creates its missing tag;
* a release body over 125,000 characters answers 422 "body is too long (maximum is 125000
  characters)" (softprops/action-gh-release#374);
* "Get an environment" answers 404 for an environment that does not exist, and needs
  `actions: read`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tools import cli
from ci_tools.build import results
from ci_tools.build.results import (
    BuildOutcome,
    PublishOutcome,
    PublishStatus,
    ResultRecord,
    Status,
)
from ci_tools.catalog import variants
from ci_tools.catalog.model import Catalog
from ci_tools.commands import release as release_command
from tests import proven
from tests.doubles.github.server import GitHubDouble
from tests.gitutil import commit_all, git, init, write

COMMIT = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
TAG = "main-1a2b3c4d5e6f"
TOKEN = "ghs_ReleaseToken0123456789"


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch, repo_root: Path) -> Iterator[GitHubDouble]:
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_SHA", "FLOX_FLOXHUB_TOKEN", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/torch-builds")
    monkeypatch.setenv("GITHUB_SHA", COMMIT)
    monkeypatch.setattr(
        release_command,
        "POLICY",
        dataclasses.replace(release_command.POLICY, sleep=lambda _s: None),
    )
    monkeypatch.chdir(repo_root)
    with GitHubDouble(lifetime=300) as github:
        monkeypatch.setenv("GITHUB_API_URL", github.url)
        yield github


def _record(
    name: str, *, published: bool = True, commit: str = COMMIT, detail: str = ""
) -> ResultRecord:
    publish = PublishOutcome(
        status=PublishStatus.PUBLISHED if published else PublishStatus.FAILED,
        org="acme",
        detail=detail,
    )
    return ResultRecord(
        variant=name,
        package=name.split("-", 1)[0],
        branch="main",
        platform="x86_64-linux",
        commit=commit,
        build=BuildOutcome(status=Status.PASSED, seconds=1.0),
        test=results.TestOutcome(status=Status.PASSED, checks=_ran(name)),
        publish=publish,
    )


def _ran(name: str) -> tuple[results.Check, ...]:
    """Checks that ran on hardware of the variant's kind (the publish policy's `ran`), as
    `ci-tools test` records them for the catalog's variant."""
    return proven.ran(proven.repo_expect("main", name))


def _save(folder: Path, *records: ResultRecord) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for record in records:
        results.save(record, results.result_path(folder, record.variant))
    return folder


def _release(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(["release", "--branch", "main", "--org", "acme", *args])
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err and "Traceback" not in out.err
    return code, out.out + out.err


def _main_variants(catalog: Catalog) -> list[str]:
    return [v.name for v in variants.expand(catalog, "main")]


CPU = "pytorch-python313-cpu-avx2"


def test_nothing_published_makes_no_release_and_says_why(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _save(tmp_path / "r", _record(CPU, published=False, detail="FloxHub said no"))
    code, said = _release(capsys, "--results", str(folder))
    assert code == 1
    assert "no release: nothing was published" in said and f"{CPU} (publish failed)" in said
    assert double.state.releases == []


def test_no_record_at_all_reports_the_planned_variants_as_failed(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planned = tmp_path / "planned.txt"
    planned.write_text(f"{CPU}\n")
    code, said = _release(capsys, "--results", str(tmp_path / "none"), "--planned", str(planned))
    assert code == 1
    assert f"{CPU} (build failed)" in said and "no release" in said
    assert "holds no result records" not in said
    assert double.state.releases == []


def test_latest_only_when_nothing_failed(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = _save(tmp_path / "clean", _record(CPU))
    assert _release(capsys, "--results", str(clean))[0] == 0
    assert double.release(TAG)["make_latest"] == "true"
    double.state.releases.clear()
    double.state.tags.clear()
    broken = _save(
        tmp_path / "broken", _record(CPU), _record("pytorch-python313-cpu-avx512", published=False)
    )
    assert _release(capsys, "--results", str(broken))[0] == 1
    assert double.release(TAG)["make_latest"] == "false"


def test_a_tag_on_another_commit_is_refused(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    double.add_tag(TAG, "f" * 40)
    code, said = _release(capsys, "--results", str(_save(tmp_path / "r", _record(CPU))))
    assert code == 2
    assert f"tag {TAG} exists on commit {'f' * 40}, not on the planned commit" in said
    assert double.state.releases == []


def test_records_of_another_commit_are_not_published_here(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = _record("pytorch-python313-cpu-avx512", commit="e" * 40)
    folder = _save(tmp_path / "r", _record(CPU), stale)
    code, said = _release(capsys, "--results", str(folder))
    assert code == 0, said
    assert "left out 1 records of another commit" in said
    body = double.release(TAG)["body"]
    assert f"flox install acme/{CPU}" in body
    assert "flox install acme/pytorch-python313-cpu-avx512" not in body


def test_long_notes_summarise_and_attach_the_table(
    double: GitHubDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    catalog: Catalog,
) -> None:
    names = _main_variants(catalog)
    long = "x" * 2000  # a publish failure's first line, as flox printed it
    records = [_record(n, published=(i % 4 == 0), detail=long) for i, n in enumerate(names)]
    code, _ = _release(capsys, "--results", str(_save(tmp_path / "r", *records)))
    assert code == 1  # some failed; the release is still made
    made = double.release(TAG)
    assert made is not None and len(made["body"]) < 100_000
    assert f"attached as `notes-{TAG}.md`" in made["body"]
    table = double.asset_bytes(TAG, f"notes-{TAG}.md")
    assert table is not None and len(table) > 125_000
    assert f"| `{names[1]}` |".encode() in table
    assert f"`{names[1]}` (publish failed)" in made["body"]  # the failures, named


def test_dry_run_with_nothing_to_publish_writes_nothing_and_fails(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _save(tmp_path / "r", _record(CPU, published=False))
    code, said = _release(capsys, "--results", str(folder), "--dry-run")
    assert code == 1 and "nothing would be published" in said
    assert all(method == "GET" for method, _path in double.state.requests)


# --- --preflight -----------------------------------------------------------------------------


def _build_repo(root: Path, repo_root: Path, *, lock: bool) -> Path:
    init(root)
    shutil.copy(repo_root / "catalog.yaml", root / "catalog.yaml")
    write(root, ".flox/env/manifest.toml", "version = 1\n")
    if lock:
        write(
            root,
            ".flox/env/manifest.lock",
            json.dumps({"lockfile-version": 1, "manifest": {"version": 1}, "packages": []}),
        )
    commit_all(root, "build repository")
    return root


def test_preflight_names_every_missing_piece(
    double: GitHubDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    repo_root: Path,
) -> None:
    monkeypatch.chdir(_build_repo(tmp_path / "b", repo_root, lock=False))
    code, said = _release(capsys, "--preflight")
    assert code == 2
    assert ".flox/env/manifest.lock is not committed" in said
    assert "FLOX_FLOXHUB_TOKEN is not set" in said
    assert "the environment `release` does not exist" in said
    assert [m for m, _p in double.state.requests] == ["GET"]  # one look, no write


def test_preflight_passes_when_a_release_could_publish(
    double: GitHubDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    repo_root: Path,
) -> None:
    root = _build_repo(tmp_path / "b", repo_root, lock=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", "flox-token")
    double.add_environment("release", reviewers=0)
    code, said = _release(capsys, "--preflight")
    assert code == 0, said
    assert "has no required reviewers" in said and "flox-token" not in said
    # A lock that is not flox's is found as well.
    write(root, ".flox/env/manifest.lock", "{}")
    git(root, "commit", "-qam", "a broken lock")
    assert _release(capsys, "--preflight")[0] == 2


def test_a_dry_run_preflight_only_says_what_it_found(
    double: GitHubDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    repo_root: Path,
) -> None:
    monkeypatch.chdir(_build_repo(tmp_path / "b", repo_root, lock=False))
    code, said = _release(capsys, "--preflight", "--dry-run")
    assert code == 0
    assert "a real one would stop: .flox/env/manifest.lock is not committed" in said
    assert "FLOX_FLOXHUB_TOKEN is not set" not in said  # a dry run needs no token
