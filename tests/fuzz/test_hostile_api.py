"""The hostile-API class: `ci-tools matrix --until-green`, `release` (dry run, real run,
`--list-published`) and `mark-green` against a "GitHub" on 127.0.0.1 that answers HTML,
wrong shapes, nulls, endless pages, 502s, or hangs (tests/fuzz/hostile_api.py).

Invariants, for every command against every mode:
  A1 no traceback; exit 0 or 1 (a broken API is a failed step, never "bad input")
  A2 `matrix --until-green` exits 0 with a matrix of every stack (a spare build, never a
     missed one) and a warning that says why
  A3 the command's time with the API stays within its budget (the RetryPolicy's total
     seconds; shortened here, the real 120 s in the long mode) plus the work around it
  A4 a bounded number of requests, whatever the pages say of a "next" one
  A5 the token is in no output
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tools.commands import mark_green as mark_green_command
from ci_tools.commands import release as release_command
from ci_tools.plan import schedule
from tests.conftest import DATA, REPO_ROOT
from tests.gitutil import commit_all, git, init, write
from tests.greens import proven_folder

from . import harness
from .hostile_api import MODES, HostileApi

TOKEN = "ghs_HostileApiToken0123456789abcdef"
# Seconds of GitHub a command gets here (its policy's total, shortened): against an API that
# hangs, every run waits it out; against one that answers, it is never reached.
HUNG_BUDGET = 0.5
BUDGET = 30.0
HANGING = ("hang", "trickle")
SLACK = 4.0  # the work around the API calls: fingerprints, notes, interpreter start
MAX_REQUESTS = 130  # 100 status requests (--max-api-calls), or a release's bounded pages
PASSED = "pytorch-python313-cpu-avx2"
STACK = "py313-cpu-avx2"


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, str]]:
    """A git checkout of the catalog, a folder with one passing record, and HEAD."""
    repo = init(tmp_path / "builds", "main")
    shutil.copy(REPO_ROOT / "catalog.yaml", repo / "catalog.yaml")
    write(repo, "README.md", "# builds\n")
    commit_all(repo, "catalog")
    head = git(repo, "rev-parse", "HEAD")
    results = tmp_path / "results"
    results.mkdir()
    record = json.loads((DATA / "results-cuda-12_9" / f"{PASSED}.result.json").read_text())
    # Of this commit and published: a release takes only those (issue 19).
    record["commit"] = head
    record["publish"] = {"status": "published", "org": "acme", "attempts": 1, "detail": ""}
    (results / f"{PASSED}.result.json").write_text(json.dumps(record), encoding="utf-8")
    for name in ("GITHUB_ACTIONS", "GH_TOKEN", "GITHUB_BASE_REF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_SHA", head)
    yield repo, results, head


def _budget(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    waits: list[float] = []
    for module in (schedule, release_command, mark_green_command):
        policy = dataclasses.replace(module.POLICY, total_seconds=seconds, sleep=waits.append)
        monkeypatch.setattr(module, "POLICY", policy)


COMMANDS = {
    "until-green": ["matrix", "--branch", "main", "--until-green"],
    "release dry run": ["release", "--branch", "cuda-12_9", "--results", "RESULTS", "--dry-run"],
    "release": ["release", "--branch", "cuda-12_9", "--results", "RESULTS"],
    "list-published": ["release", "--branch", "cuda-12_9", "--org", "acme", "--list-published"],
    "mark-green": [
        "mark-green",
        "--stack",
        STACK,
        "--fingerprint",
        "FINGERPRINT",
        "--commit",
        "HEAD",
        "--results",
        "PROVEN",
    ],
}


def _fingerprint(repo: Path, stack: str) -> str:
    """`stack`'s current fingerprint, as the plan job prints it (mark-green refuses another)."""
    planned = harness.run_inprocess(["matrix", "--branch", "main", "--fingerprints"], repo)
    assert planned.code == 0, planned.stderr
    return next(
        e["fingerprint"] for e in json.loads(planned.stdout)["include"] if e["name"] == stack
    )


def _run(
    mode: str,
    command: str,
    checkout: tuple[Path, Path, str],
    monkeypatch: pytest.MonkeyPatch,
    budget: float,
    seed: int = 0,
) -> tuple[harness.Run, float, int]:
    repo, results, head = checkout
    words = {"RESULTS": results.as_posix(), "HEAD": head, "PROVEN": str(proven_folder(head))}
    if "FINGERPRINT" in COMMANDS[command]:
        words["FINGERPRINT"] = _fingerprint(repo, STACK)
    argv = [words.get(a, a) for a in COMMANDS[command]]
    with HostileApi(mode, seed=seed) as api:
        monkeypatch.setenv("GITHUB_API_URL", api.url)
        monkeypatch.setenv("GITHUB_REPOSITORY", api.repository)
        started = time.monotonic()
        run = harness.run_inprocess(argv, repo)
        seconds = time.monotonic() - started
        requests = api.requests
    label = f"[{mode}, {command}]"
    assert run.crash is None, f"{label} crashed:\n{run.crash}"
    assert "Traceback" not in run.stderr, f"{label}\n{run.stderr}"
    assert run.code in (0, 1), f"{label} exit {run.code}\n{run.stderr[-2000:]}"  # A1
    assert seconds <= budget + SLACK, f"{label} took {seconds:.1f} s, budget {budget} s"  # A3
    assert requests <= MAX_REQUESTS, f"{label} made {requests} requests"  # A4
    assert TOKEN not in run.stdout + run.stderr, f"{label} printed the token"  # A5
    if command == "until-green":  # A2
        assert run.code == 0, run.stderr
        planned = json.loads(run.stdout)["include"]
        assert len(planned) == 45, f"{label} planned {len(planned)} of 45 stacks"
        assert "--until-green:" in run.stderr
    return run, seconds, requests


@pytest.mark.parametrize("mode", MODES)
def test_every_command_survives_every_broken_api(
    mode: str,
    checkout: tuple[Path, Path, str],
    monkeypatch: pytest.MonkeyPatch,
    fuzz_long: bool,
) -> None:
    """Every command in the long mode; the plan's and one other, in turn, in the short one."""
    budget = HUNG_BUDGET if mode in HANGING else BUDGET
    _budget(monkeypatch, budget)
    others = [c for c in COMMANDS if c != "until-green"]
    commands = list(COMMANDS) if fuzz_long else ["until-green", others[MODES.index(mode) % 4]]
    for command in commands:
        _run(mode, command, checkout, monkeypatch, budget)


def test_mixed_answers(
    checkout: tuple[Path, Path, str],
    monkeypatch: pytest.MonkeyPatch,
    fuzz_seed: int,
    fuzz_long: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _budget(monkeypatch, BUDGET)
    seeds = range(fuzz_seed, fuzz_seed + (60 if fuzz_long else 1))
    codes: dict[str, int] = {}
    for seed in seeds:
        for command in COMMANDS:
            run, _, _ = _run("mixed", command, checkout, monkeypatch, BUDGET, seed)
            codes[f"{command}={run.code}"] = codes.get(f"{command}={run.code}", 0) + 1
    with capsys.disabled():
        print(
            f"\nfuzz hostile API (mixed): {len(seeds)} seeds x {len(COMMANDS)} commands, "
            f"exit codes {dict(sorted(codes.items()))}, A1-A5 held"
        )


# --- the reproductions --------------------------------------------------------------


@pytest.mark.parametrize("mode", ["html", "object", "nulls"])
def test_until_green_falls_back_instead_of_crashing(
    mode: str, checkout: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 item 8: an HTML 200, an object for the list, `context: null` crashed the
    plan job; each now schedules every stack and says why."""
    _budget(monkeypatch, BUDGET)
    run, _, _ = _run(mode, "until-green", checkout, monkeypatch, BUDGET)
    if mode != "nulls":
        assert "cannot read the green records" in run.stderr and "not what GitHub" in run.stderr


@pytest.mark.parametrize(
    ("mode", "code", "said"),
    [
        ("nulls", 0, "updated release"),  # `prerelease: null` on the draft made PyGithub assert
        ("html", 1, "not what GitHub's API returns"),  # HTML raised TypeError
    ],
)
def test_release_survives_a_draft_with_nulls_and_fails_cleanly_on_html(
    mode: str,
    code: int,
    said: str,
    checkout: tuple[Path, Path, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 20 item 8: `release` crashed on HTML and on a draft with `prerelease: null`."""
    _budget(monkeypatch, BUDGET)
    run, _, _ = _run(mode, "release", checkout, monkeypatch, BUDGET)
    assert run.code == code, run.stderr
    assert said in run.stdout + run.stderr
    if mode == "nulls":
        assert "kept as draft" in run.stdout


@pytest.mark.parametrize("command", ["release", "list-published"])
def test_endless_next_pages_are_not_followed_for_ever(
    command: str, checkout: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 item 8: about 5,600 requests in 90 s; now a bounded number of pages."""
    _budget(monkeypatch, 60.0)
    _, _, requests = _run("endless", command, checkout, monkeypatch, 60.0)
    assert requests <= 30


def test_a_hung_api_holds_until_green_to_its_budget(
    checkout: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch, fuzz_long: bool
) -> None:
    """Issue 20 item 8: the budget is 120 s, a hung API took 144 s. Here the budget is
    shortened to BUDGET; the long mode holds the real one."""
    budget = schedule.POLICY.total_seconds if fuzz_long else HUNG_BUDGET
    if not fuzz_long:
        _budget(monkeypatch, budget)
    run, seconds, _ = _run("hang", "until-green", checkout, monkeypatch, budget)
    assert "no answer within the" in run.stderr and "budget for GitHub" in run.stderr
    assert seconds >= budget * 0.9
