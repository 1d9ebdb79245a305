"""`ci-tools mark-green` as the build leg runs it, against the GitHub API double: what it
records, where, and what it refuses (issue 19 items 3, 4 and 6).

GitHub facts relied on (and modelled by the double, tests/doubles/github):
* a pull request's run checks out GitHub's merge commit; the event payload's
  `pull_request.head.sha` is the pull request's head commit ("Webhook events and payloads");
* a fork's pull request and a run Dependabot started get a read-only GITHUB_TOKEN (docs
  "Automatic token authentication", "Automating Dependabot with GitHub Actions"); a write
  then answers 403 "Resource not accessible by integration".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools.build.results import Check, Status
from ci_tools.plan import statuses
from tests.conftest import CliRunner
from tests.doubles.github.server import READ_ONLY, GitHubDouble
from tests.gitutil import commit_all, git, write
from tests.greens import (
    BASE,
    CPU,
    CPU_STACK,
    DEP,
    GPU_STACK,
    TOKEN,
    TORCH,
    mark,
    plan,
    proven,
    proven_folder,
)


def _proven() -> tuple[str, str]:
    """--results with records that prove every stack at the current HEAD."""
    return ("--results", str(proven_folder()))


def _event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, data: object) -> None:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_NAME", name)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(path))


def _pull_request_event(head: str, head_repo: str = "acme/torch-builds") -> dict[str, object]:
    return {
        "action": "synchronize",
        "number": 7,
        "pull_request": {"number": 7, "head": {"sha": head, "repo": {"full_name": head_repo}}},
    }


def _pull_request_checkout(repo: Path, change: str) -> tuple[str, str]:
    """A pull request changing the CPU recipe (`X=1` -> `change`), checked out as a pull
    request's run checks it out: GitHub's merge commit, detached. Its head and that merge."""
    git(repo, "checkout", "-q", "-b", "fix")
    write(repo, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", change))
    head = commit_all(repo, "fix")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "--no-edit", "fix")
    merge = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    return head, merge


def _step_env(tmp_path: Path, github: GitHubDouble, head: str, merge: str) -> dict[str, str]:
    """The environment GitHub gives a step of that pull request's run."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps(_pull_request_event(head)), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SHA": merge,
        "GITHUB_BASE_REF": "main",
        "GITHUB_REPOSITORY": "acme/torch-builds",
        "GITHUB_API_URL": github.url,
        "GITHUB_TOKEN": "ghs_step",
        "GITHUB_ACTOR": "maintainer",
    }


def test_records_on_the_pull_requests_head_not_the_merge_commit(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    git(repo, "checkout", "-q", "-b", "fix")
    write(repo, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", "Y=5"))
    head = commit_all(repo, "fix")
    git(repo, "checkout", "-q", "main")
    write(repo, "CHANGES.md", "meanwhile\n")
    commit_all(repo, "main moves on")
    # GitHub's refs/pull/7/merge, as actions/checkout checks it out: detached.
    git(repo, "merge", "-q", "--no-ff", "--no-edit", "fix")
    merge = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    planned, _ = plan(capsys, "--branch", "main")
    monkeypatch.setenv("GITHUB_SHA", merge)
    _event(tmp_path, monkeypatch, "pull_request", _pull_request_event(head))
    code, said = mark(capsys, CPU_STACK, planned[CPU_STACK], "--branch", "main")
    assert code == 0, said
    assert github.statuses(merge) == []
    (status,) = github.statuses(head)
    assert status["description"] == statuses.description(planned[CPU_STACK])


def test_a_push_records_on_the_pushed_commit(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    planned, _ = plan(capsys)
    head = git(repo, "rev-parse", "HEAD")
    monkeypatch.setenv("GITHUB_SHA", head)
    _event(tmp_path, monkeypatch, "push", {"after": head})
    assert mark(capsys, GPU_STACK, planned[GPU_STACK], BASE, DEP)[0] == 0
    assert [s["context"] for s in github.statuses(head)] == [f"ci-tools/{GPU_STACK}"]


@pytest.mark.parametrize(
    ("event", "actor", "head_repo", "says"),
    [
        ("pull_request", "dependabot[bot]", "acme/torch-builds", "Dependabot"),
        ("push", "dependabot[bot]", "acme/torch-builds", "Dependabot"),
        ("pull_request", "someone", "someone/torch-builds", "fork someone/torch-builds"),
    ],
)
def test_a_read_only_token_never_tries_to_write(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    event: str,
    actor: str,
    head_repo: str,
    says: str,
) -> None:
    planned, _ = plan(capsys)
    head = git(repo, "rev-parse", "HEAD")
    monkeypatch.setenv("GITHUB_ACTOR", actor)
    monkeypatch.setenv("GITHUB_SHA", head)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_read_only")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    github.grant("ghs_read_only", permissions=READ_ONLY)
    _event(tmp_path, monkeypatch, event, _pull_request_event(head, head_repo))
    before = len(github.state.requests)
    code, said = mark(capsys, CPU_STACK, planned[CPU_STACK])
    assert code == 0  # the leg stays green
    assert said.startswith("::notice::mark-green: ci-tools/py313-cpu-avx2 not recorded")
    assert says in said
    assert len(github.state.requests) == before  # not even tried


def test_github_refusing_the_write_is_a_notice_not_a_failure(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A token the event does not reveal as read-only: GitHub answers 403, and the leg that
    built and tested stays green; the cost is a rebuild on the next push."""
    planned, _ = plan(capsys)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_read_only")
    github.grant("ghs_read_only", permissions=READ_ONLY)
    before = len(github.state.requests)
    code, said = mark(
        capsys, CPU_STACK, planned[CPU_STACK], "--commit", git(repo, "rev-parse", "HEAD")
    )
    assert code == 0
    assert "HTTP 403" in said and "not recorded" in said
    assert github.statuses(git(repo, "rev-parse", "HEAD")) == []
    for method, path in github.state.requests[before:]:
        assert (method, path.rsplit("/", 2)[-2]) == ("POST", "statuses")


def test_a_write_github_refuses_is_tried_once_then_a_notice(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
) -> None:
    planned, _ = plan(capsys)
    missing = "1" * 40  # GitHub refuses a status on a commit it does not have (422)
    code, said = mark(capsys, CPU_STACK, planned[CPU_STACK], "--commit", missing)
    assert code == 0
    assert "No commit found for SHA" in said and "not recorded" in said
    assert sum(1 for m, _p in github.state.requests if m == "POST") == 1  # 4xx: no retry


def test_refuses_a_fingerprint_that_is_not_current(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
) -> None:
    planned, _ = plan(capsys)
    before = len(github.state.requests)
    write(repo, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", "Y=9"))
    commit_all(repo, "the recipe moved on after the plan")
    code, said = mark(
        capsys, CPU_STACK, planned[CPU_STACK], "--commit", git(repo, "rev-parse", "HEAD")
    )
    assert code == 2
    assert f"is not the current fingerprint of {CPU_STACK}" in said
    # Another stack's fingerprint, or one of the other kind, is no better.
    head = git(repo, "rev-parse", "HEAD")
    assert mark(capsys, GPU_STACK, planned[CPU_STACK], "--commit", head)[0] == 2
    other = ("raw-" if planned[GPU_STACK].startswith("nix-") else "nix-") + planned[GPU_STACK][4:]
    assert mark(capsys, GPU_STACK, other, "--commit", head)[0] == 2
    assert len(github.state.requests) == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--stack", "py313-sm99-avx"],
            'not an entry of the matrix of branch main (did you mean "py313-sm61-avx"?)',
        ),
        (["--stack", GPU_STACK, DEP], f"the matrix's entry {GPU_STACK} is not made of {DEP}"),
        (["--stack", GPU_STACK, "pytorch-python313-cpu-avx9"], "not a variant of branch main"),
    ],
)
def test_refuses_an_unknown_stack(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    says: str,
) -> None:
    from ci_tools import cli

    head = git(repo, "rev-parse", "HEAD")
    fingerprint = "raw-" + "0" * 32
    code = cli.main(
        ["mark-green", "--fingerprint", fingerprint, "--commit", head, *args, *_proven()]
    )
    assert code == 2
    assert says in capsys.readouterr().err
    assert github.state.requests == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--stack", "a b", "--fingerprint", "nix-" + "0" * 32], "is not a stack name"),
        (["--stack", "py313", "--fingerprint", "xyz"], "is not a fingerprint"),
        (["--stack", "py313", "--fingerprint", "0" * 32], "has no kind (an older ci-tools"),
        (
            ["--stack", "py313", "--fingerprint", "raw-" + "0" * 32, "--commit", "HEAD"],
            "full commit id",
        ),
    ],
)
def test_validates_its_arguments(
    repo: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    from ci_tools import cli

    assert cli.main(["mark-green", *args, *_proven()]) == 2
    assert says in capsys.readouterr().err


def test_the_build_legs_call_as_the_workflow_makes_it(
    repo: Path,
    github: GitHubDouble,
    tmp_path: Path,
    run_cli: CliRunner,
) -> None:
    """The step as phase 2's workflow runs it on a pull request: a separate process, the
    environment GitHub gives a step (event payload, GITHUB_SHA of the merge commit, the
    entry's fields through env), no --commit: the green lands on the pull request's head."""
    head, merge = _pull_request_checkout(repo, "Y=6")
    entry = next(
        e
        for e in json.loads(
            run_cli("matrix", "--branch", "main", "--fingerprints", cwd=repo).stdout
        )["include"]
        if e["name"] == CPU_STACK
    )
    step_env = _step_env(tmp_path, github, head, merge)
    done = run_cli(
        "mark-green",
        "--stack",
        entry["name"],
        "--fingerprint",
        entry["fingerprint"],
        "--branch",
        entry["branch"],
        *entry["packages"],
        *_proven(),
        cwd=repo,
        env=step_env,
    )
    assert done.returncode == 0, done.stderr
    assert github.statuses(merge) == []
    assert [s["context"] for s in github.statuses(head)] == [f"ci-tools/{CPU_STACK}"]
    assert "ghs_step" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("checks", "says"),
    [
        ((), "unproven"),
        ((Check(name="cpu-mlp", status=Status.SKIPPED),), "unproven"),
        ((Check(name="cpu-mlp", status=Status.FAILED),), "test failed: cpu-mlp"),
        # Issue 29: a record whose only check is one `ci-tools test` never makes.
        ((Check(name="x", status=Status.PASSED),), "not a check `ci-tools test` makes for it: x"),
    ],
)
def test_a_stack_whose_checks_proved_nothing_is_never_marked(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    checks: tuple[Check, ...],
    says: str,
) -> None:
    head, _ = plan(capsys)
    folder = proven(tmp_path / "results", (CPU,), checks)
    sha = git(repo, "rev-parse", "HEAD")
    code, said = mark(capsys, CPU_STACK, head[CPU_STACK], "--results", str(folder), "--commit", sha)
    assert code == 1, said
    assert "not marked green" in said and says in said
    assert all(method == "GET" for method, _ in github.state.requests)


def test_schema_1_records_with_a_static_sass_and_no_listing_are_never_marked(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 29: import-torch passed and `sass: static` with no SASS listing, in schema-1
    records (schema 1 predates `static`), once proved a GPU stack `ran-cpu`."""
    head, _ = plan(capsys, "--runners", str(_cpu_runner(tmp_path)))
    said_static = (
        Check(name="import-torch", status=Status.PASSED),
        Check(name="sass", status=Status.STATIC),
    )
    folder = proven(tmp_path / "results", (BASE, DEP), said_static, schema=1)
    sha = git(repo, "rev-parse", "HEAD")
    code, said = mark(
        capsys, GPU_STACK, head[GPU_STACK], "--results", str(folder), "--commit", sha,
        "--runners", str(_cpu_runner(tmp_path)),
    )  # fmt: skip
    assert code == 1, said
    assert "not marked green" in said and "not the checks `ci-tools test` records" in said
    assert github.statuses(sha) == []


RUNNERS_CPU_ONLY = """\
builders:
  x86_64-linux:
    labels: [self-hosted, Linux, X64]
    timeout_minutes: 60
    cpu_flags: [avx, avx2, fma, f16c]
"""


def _cpu_runner(tmp_path: Path) -> Path:
    """A fleet with an AVX CPU test runner and no GPU: an sm61-avx stack routes `cpu`, which
    asks `ran-cpu` of it."""
    path = tmp_path / "runners.yaml"
    path.write_text(RUNNERS_CPU_ONLY)
    return path


def test_a_stack_without_a_record_of_each_package_is_never_marked(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    head, _ = plan(capsys)
    folder = proven(tmp_path / "results", (BASE,))  # the stack's torchvision has none
    sha = git(repo, "rev-parse", "HEAD")
    code, said = mark(capsys, GPU_STACK, head[GPU_STACK], "--results", str(folder), "--commit", sha)
    assert code == 1
    assert f"{DEP} (no result record)" in said


def test_no_answer_within_the_budget_is_a_notice_not_a_failure(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 19 item 6: GitHub too slow to answer within the minute mark-green allows is a
    green not recorded (a later rebuild), never a failed leg."""
    import dataclasses
    import itertools

    from ci_tools.commands import mark_green as command

    planned, _ = plan(capsys)
    ticks = itertools.count(step=100.0)  # each reading of the clock: 100 s later
    late = dataclasses.replace(command.POLICY, clock=lambda: float(next(ticks)))
    monkeypatch.setattr(command, "POLICY", late)
    head = git(repo, "rev-parse", "HEAD")
    code, said = mark(capsys, CPU_STACK, planned[CPU_STACK], "--commit", head)
    assert code == 0, said
    assert "no answer within the 60 s budget for GitHub" in said and "not recorded" in said
    assert github.statuses(head) == []


# --- the shard form: one job marks every proven entry of a shard -------------------------------

AVX512 = "pytorch-python313-cpu-avx512"
AVX512_STACK = "py313-cpu-avx512"


def _shard(repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """The branch's matrix with fingerprints, as the plan job hands a shard to build-stack."""
    from ci_tools import cli

    assert cli.main(["matrix", "--branch", "main", "--fingerprints"]) == 0
    path = tmp_path / "shard.json"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    return path


def _mark_shard(
    capsys: pytest.CaptureFixture[str], shard: Path, root: Path, *args: str
) -> tuple[int, str, str]:
    from ci_tools import cli

    code = cli.main(["mark-green", "--shard", str(shard), "--results-root", str(root), *args])
    out = capsys.readouterr()
    assert "Traceback" not in out.err and TOKEN not in out.out + out.err
    return code, out.out, out.err


def test_a_shard_marks_what_is_proven_and_notices_the_rest(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Issue 19 item 6 in one job: of three entries, the proven one is marked; the one whose
    checks proved nothing and the one whose recipe moved on since the plan get a notice each,
    and the job stays green (exit 0) with one request."""
    write(repo, f".flox/pkgs/{AVX512}.nix", TORCH.replace("X=1", "Z=1"))
    commit_all(repo, "an avx512 variant")
    shard = _shard(repo, capsys, tmp_path)
    assert {e["name"] for e in json.loads(shard.read_text())["include"]} == {
        GPU_STACK, CPU_STACK, AVX512_STACK
    }  # fmt: skip
    write(repo, f".flox/pkgs/{AVX512}.nix", TORCH.replace("X=1", "Z=2"))
    head = commit_all(repo, "the avx512 recipe moved on after the plan")
    root = tmp_path / "artifacts"  # the legs built the checked-out commit
    proven(root / f"results-{GPU_STACK}", (BASE, DEP))
    skipped = (Check(name="cpu-mlp", status=Status.SKIPPED),)
    proven(root / f"results-{CPU_STACK}", (CPU,), skipped)
    proven(root / f"results-{AVX512_STACK}", (AVX512,))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    before = len(github.state.requests)
    code, out, err = _mark_shard(capsys, shard, root, "--commit", head)
    assert code == 0, err
    (status,) = github.statuses(head)
    assert status["context"] == f"ci-tools/{GPU_STACK}"
    notices = [line for line in err.splitlines() if line.startswith("::notice::")]
    assert len(notices) == 2, err
    (unproven,) = [n for n in notices if f"ci-tools/{CPU_STACK} not recorded" in n]
    assert "not proven" in unproven and "unproven" in unproven
    (stale,) = [n for n in notices if f"ci-tools/{AVX512_STACK} not recorded" in n]
    assert "is not its current fingerprint" in stale
    assert [m for m, _ in github.state.requests[before:]] == ["POST"]
    assert "1 of the shard's 3 stacks recorded green" in out


_ENTRY = {"name": CPU_STACK, "branch": "main", "packages": [CPU]}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "cannot read it"),
        ("not json", "not a matrix as `ci-tools matrix` prints it"),
        ('{"matrix": []}', 'a matrix needs an "include" list'),
        (json.dumps({"include": [{"branch": "main", "packages": [CPU]}]}), "include[0].name"),
        (
            json.dumps({"include": [{**_ENTRY, "fingerprint": "xyz"}]}),
            "include[0].fingerprint",
        ),
        (json.dumps({"include": [_ENTRY, _ENTRY]}), "include[1].name: py313-cpu-avx2 is in"),
        (json.dumps({"include": [{**_ENTRY, "packages": "x"}]}), "include[0].packages"),
        (json.dumps({"include": [{**_ENTRY, "name": "a b"}]}), "is not a stack name"),
        (json.dumps({"include": [_ENTRY] * 257}), "257 entries; a shard is one matrix"),
    ],
)
def test_a_bad_shard_file_is_exit_2_naming_it(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    text: str | None,
    says: str,
) -> None:
    shard = tmp_path / "shard.json"
    if text is not None:
        shard.write_text(text, encoding="utf-8")
    code, _out, err = _mark_shard(capsys, shard, tmp_path, "--commit", "1" * 40)
    assert code == 2
    assert f"--shard {shard}" in err and says in err
    assert github.state.requests == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--stack", CPU_STACK], "leave out --stack"),
        ([CPU], "leave out PACKAGE"),
        (["--results-root", None], "--shard needs --results-root"),
    ],
)
def test_the_shard_form_takes_none_of_the_one_stack_forms_arguments(
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str | None],
    says: str,
) -> None:
    from ci_tools import cli

    shard = _shard(repo, capsys, tmp_path)
    argv = ["mark-green", "--shard", str(shard), "--results-root", str(tmp_path)]
    if args[-1] is None:
        argv = argv[:-2]
    else:
        argv += [a for a in args if a is not None]
    assert cli.main(argv) == 2
    assert says in capsys.readouterr().err


def test_the_one_stack_form_says_what_it_needs(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ci_tools import cli

    assert cli.main(["mark-green", "--stack", CPU_STACK]) == 2
    err = capsys.readouterr().err
    assert "mark-green needs --fingerprint, --results" in err and "--shard FILE" in err


def test_a_shard_stops_writing_at_the_first_refusal_and_paces_its_writes(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bounded: every write goes to one commit with one token, so after GitHub refuses one
    the rest are not tried (a notice each). Writes go a second apart (GitHub's best
    practices for mutative requests)."""
    from tests.greens import WAITS

    shard = _shard(repo, capsys, tmp_path)
    root = tmp_path / "artifacts"
    proven(root / f"results-{GPU_STACK}", (BASE, DEP))
    proven(root / f"results-{CPU_STACK}", (CPU,))
    head = git(repo, "rev-parse", "HEAD")
    code, out, err = _mark_shard(capsys, shard, root, "--commit", head)
    assert code == 0, err
    assert len(github.statuses(head)) == 2
    assert len(WAITS) == 1 and 0.0 <= WAITS[0] <= 1.0  # the second write waited its turn
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_read_only")
    github.grant("ghs_read_only", permissions=READ_ONLY)
    before = len(github.state.requests)
    code, out, err = _mark_shard(capsys, shard, root, "--commit", head)
    assert code == 0
    assert [m for m, _ in github.state.requests[before:]] == ["POST"]
    assert "HTTP 403" in err and "not tried after GitHub refused an earlier write" in err
    assert "0 of the shard's 2 stacks recorded green" in out


def test_a_shard_with_a_read_only_token_never_tries_to_write(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    shard = _shard(repo, capsys, tmp_path)
    head = git(repo, "rev-parse", "HEAD")
    monkeypatch.setenv("GITHUB_SHA", head)
    monkeypatch.setenv("GITHUB_ACTOR", "dependabot[bot]")
    _event(tmp_path, monkeypatch, "push", {"after": head})
    code, _out, err = _mark_shard(capsys, shard, tmp_path)
    assert code == 0
    assert err.count("not recorded: a run Dependabot started") == 2
    assert github.state.requests == []


def test_the_shard_step_as_the_workflow_runs_it(
    repo: Path, github: GitHubDouble, tmp_path: Path, run_cli: CliRunner
) -> None:
    """As build-stack's mark-green job runs it on a pull request: a separate process, the
    event payload, the merge commit checked out, no --commit: greens land on the head."""
    head, merge = _pull_request_checkout(repo, "Y=7")
    shard = tmp_path / "shard.json"
    shard.write_text(run_cli("matrix", "--branch", "main", "--fingerprints", cwd=repo).stdout)
    root = tmp_path / "results"
    proven(root / f"results-{CPU_STACK}", (CPU,))  # the GPU stack's legs left nothing
    step_env = _step_env(tmp_path, github, head, merge)
    args = ("mark-green", "--shard", str(shard), "--results-root", str(root))
    done = run_cli(*args, cwd=repo, env=step_env)
    assert done.returncode == 0, done.stderr
    assert github.statuses(merge) == []
    assert [s["context"] for s in github.statuses(head)] == [f"ci-tools/{CPU_STACK}"]
    assert f"::notice::mark-green: ci-tools/{GPU_STACK} not recorded: no records" in done.stderr
    assert "ghs_step" not in done.stdout + done.stderr


# --- issue 29: every record counts, and only at the commit it names ---------------------------

FAILED = (Check(name="cpu-mlp", status=Status.FAILED),)


def _failed_beside_a_passing_copy(folder: Path, failed_in: str) -> Path:
    """The CPU variant's record in `folder` and in two subfolders (an artifact download nests
    one folder deep), failed in `failed_in` and passing in the others: sorted, the records
    of a-copy/ are read first and those of zz-copy/ last."""
    for where in ("top", "a-copy", "zz-copy"):
        place = folder if where == "top" else folder / where
        proven(place, (CPU,), FAILED if where == failed_in else None)
    return folder


@pytest.mark.parametrize("failed_in", ["top", "a-copy", "zz-copy"])
def test_a_failed_record_beside_a_passing_copy_is_never_marked(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    failed_in: str,
) -> None:
    head, _ = plan(capsys)
    folder = _failed_beside_a_passing_copy(tmp_path / "results", failed_in)
    sha = git(repo, "rev-parse", "HEAD")
    code, said = mark(capsys, CPU_STACK, head[CPU_STACK], "--results", str(folder), "--commit", sha)
    assert code == 1, said
    assert "not marked green" in said and "test failed: cpu-mlp" in said
    assert all(method == "GET" for method, _ in github.state.requests)


@pytest.mark.parametrize("failed_in", ["top", "a-copy", "zz-copy"])
def test_a_shard_entry_with_a_failed_record_beside_a_passing_copy_is_noticed(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    failed_in: str,
) -> None:
    shard = _shard(repo, capsys, tmp_path)
    root = tmp_path / "artifacts"
    proven(root / f"results-{GPU_STACK}", (BASE, DEP))
    _failed_beside_a_passing_copy(root / f"results-{CPU_STACK}", failed_in)
    head = git(repo, "rev-parse", "HEAD")
    code, _out, err = _mark_shard(capsys, shard, root, "--commit", head)
    assert code == 0, err
    assert [s["context"] for s in github.statuses(head)] == [f"ci-tools/{GPU_STACK}"]
    assert f"ci-tools/{CPU_STACK} not recorded: not proven: {CPU} (test failed: cpu-mlp" in err


OTHER = "b" * 40


def test_records_of_another_commit_prove_nothing(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    head, _ = plan(capsys)
    sha = git(repo, "rev-parse", "HEAD")
    for commit, says in ((OTHER, f"a record of commit {OTHER[:12]}"), ("", "names no commit")):
        folder = proven(tmp_path / f"results-{commit or 'none'}", (CPU,))
        for path in folder.iterdir():  # as another commit's build wrote it
            data = json.loads(path.read_text(encoding="utf-8"))
            data["commit"] = commit
            path.write_text(json.dumps(data), encoding="utf-8")
        args = ("--results", str(folder), "--commit", sha)
        code, said = mark(capsys, CPU_STACK, head[CPU_STACK], *args)
        assert code == 1, said
        assert "not marked green" in said and says in said
    assert all(method == "GET" for method, _ in github.state.requests)


def test_a_shard_entry_proven_at_another_commit_is_noticed(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shard = _shard(repo, capsys, tmp_path)
    root = tmp_path / "artifacts"
    proven(root / f"results-{GPU_STACK}", (BASE, DEP))
    proven(root / f"results-{CPU_STACK}", (CPU,), commit=OTHER)
    head = git(repo, "rev-parse", "HEAD")
    code, _out, err = _mark_shard(capsys, shard, root, "--commit", head)
    assert code == 0, err
    assert [s["context"] for s in github.statuses(head)] == [f"ci-tools/{GPU_STACK}"]
    assert f"ci-tools/{CPU_STACK} not recorded: not proven: {CPU} (a record of commit" in err
