"""A build repository in git and the GitHub API double, for the tests of rebuild-until-green
(`ci-tools matrix --until-green`, `ci-tools mark-green`): both run in-process against the
double's HTTP server, so every request goes through PyGithub as it does on GitHub.

The fixtures `repo` (the repository, the current directory) and `github` (the double,
GITHUB_API_URL pointing at it) reach test modules through their folder's conftest.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tools import cli
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Check, ResultRecord, Status, test_status
from ci_tools.commands import _green_shard
from ci_tools.commands import mark_green as mark_green_command
from ci_tools.plan import schedule
from tests.doubles.github.server import GitHubDouble
from tests.gitutil import commit_all, git, init, write

TOKEN = "ghs_SeCrEt0123456789abcdefTOKEN"
OWNER_REPO = "acme/torch-builds"
BASE = "pytorch-python313-cuda12_8-sm61-avx"
DEP = "torchvision-python313-cuda12_8-sm61-avx"
CPU = "pytorch-python313-cpu-avx2"
GPU_STACK = "py313-sm61-avx"
CPU_STACK = "py313-cpu-avx2"
TORCH = "{ }:\nlet s = ''\n  export X=1\n''; in s\n"
SETTINGS = 'branches:\n  main:\n    versions: {pytorch: "2.8.0", torchvision: "0.23.0"}\n'
CLEARED = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_ACTIONS",
    "GITHUB_SHA",
    "GITHUB_BASE_REF",
    "GITHUB_HEAD_REF",
    "GITHUB_REF",
    "GITHUB_EVENT_NAME",
    "GITHUB_EVENT_PATH",
    "GITHUB_ACTOR",
)


def build_repo(root: Path) -> Path:
    init(root, "main")
    write(root, f".flox/pkgs/{BASE}.nix", TORCH)
    write(root, f".flox/pkgs/{DEP}.nix", f"{{ }}:\nimport ./{BASE}.nix {{ }}\n")
    write(root, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", "Y=1"))
    write(root, "README.md", "# builds\n")
    # The versions `ci-tools test` checks: without them its version checks are skipped, and
    # a record with a skipped check proves nothing.
    write(root, "ci-tools.yaml", SETTINGS)
    commit_all(root, "recipes")
    return root


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = build_repo(tmp_path / "builds")
    monkeypatch.chdir(root)
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", OWNER_REPO)
    return root


# What the `github` fixture's retry policies slept, in seconds (they never sleep for real).
WAITS: list[float] = []


@pytest.fixture
def github(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubDouble]:
    """The double, knowing the repository's commits; retries wait through a list."""
    for module in (schedule, mark_green_command, _green_shard):
        monkeypatch.setattr(
            module, "POLICY", dataclasses.replace(module.POLICY, sleep=WAITS.append)
        )
    WAITS.clear()
    with GitHubDouble(repository=OWNER_REPO, lifetime=3600) as double:
        double.know_commits(lambda sha: _has_commit(repo, sha))
        monkeypatch.setenv("GITHUB_API_URL", double.url)
        yield double


def _has_commit(repo: Path, sha: str) -> bool:
    try:
        return git(repo, "cat-file", "-t", sha) == "commit"
    except subprocess.CalledProcessError:
        return False


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, str], str]:
    """stack -> fingerprint of what `matrix --until-green` schedules, and its stderr."""
    code = cli.main(["matrix", "--until-green", *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert TOKEN not in out.out + out.err
    return {e["name"]: e["fingerprint"] for e in json.loads(out.out)["include"]}, out.err


def proven(
    folder: Path,
    variants: tuple[str, ...] = (BASE, DEP, CPU),
    checks: tuple[Check, ...] | None = None,
    commit: str | None = None,
    schema: int = results.SCHEMA,
) -> Path:
    """A results folder whose records prove `variants` (their checks, as `ci-tools test` makes
    them for the checkout's variants, ran on hardware of their kind), as a stack's test leg
    leaves it; `checks` replaces what they recorded. They name
    `commit`, by default the current folder's HEAD, as a build there records it."""
    commit = commit or checked_out()
    for name in variants:
        said = _ran(name) if checks is None else checks
        record = ResultRecord(
            variant=name,
            package=name.split("-", 1)[0],
            branch="main",
            platform="x86_64-linux",
            commit=commit,
            build=BuildOutcome(status=Status.PASSED, seconds=1.0),
            test=results.TestOutcome(status=test_status(said), checks=said),
            schema=schema,
        )
        results.save(record, results.result_path(folder, name))
    return folder


def _ran(name: str) -> tuple[Check, ...]:
    """The checks `ci-tools test` records for the checkout's variant `name`, all passed."""
    from tests.proven import expected_here, ran  # imported only where asked for

    return ran(expected_here("main", [name])[name])


def checked_out() -> str | None:
    """The current folder's HEAD; None outside a git checkout."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


_PROVEN: dict[str | None, Path] = {}


def proven_folder(commit: str | None = None) -> Path:
    """One folder of proving records of `commit` (by default the current folder's HEAD) for
    the whole test session (a record proves only the commit it names)."""
    head = commit or checked_out()
    if head not in _PROVEN:
        _PROVEN[head] = proven(Path(tempfile.mkdtemp(prefix="ci-tools-proven-")), commit=head)
    return _PROVEN[head]


def mark(
    capsys: pytest.CaptureFixture[str], stack: str, fingerprint: str, *args: str
) -> tuple[int, str]:
    """`ci-tools mark-green`'s exit code and output (with records that prove the stack,
    unless `args` names its own --results)."""
    if "--results" not in args:
        args = (*args, "--results", str(proven_folder()))
    code = cli.main(["mark-green", "--stack", stack, "--fingerprint", fingerprint, *args])
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err
    assert "Traceback" not in out.err
    return code, out.out + out.err


def green(
    capsys: pytest.CaptureFixture[str], stack: str, fingerprint: str, repo: Path, at: str = "HEAD"
) -> None:
    """What a build leg does when its stack passed: record it, here on `at`."""
    code, said = mark(capsys, stack, fingerprint, "--commit", git(repo, "rev-parse", at))
    assert code == 0, said
    assert "is green at" in said, said


def docs_push(repo: Path, text: str) -> str:
    write(repo, "README.md", text)
    return commit_all(repo, "docs")


def statuses_on(double: GitHubDouble, sha: str) -> list[tuple[str, str]]:
    return [(s["context"], s["description"]) for s in double.statuses(sha)]
