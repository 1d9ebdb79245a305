"""`ci-tools mark-green --record` (each stack's job, after its own test) and `--publish` (the
run's last job): a run's greens in one check run, which `matrix --until-green` reads (issue 28
items 3 and 4), against the GitHub API double (which enforces GitHub's rate limits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools import cli
from ci_tools.build.results import Check, Status
from ci_tools.plan import greens_aggregate
from tests.doubles.github.server import GitHubDouble
from tests.gitutil import commit_all, git, write
from tests.greens import BASE, CPU, CPU_STACK, DEP, GPU_STACK, TOKEN, plan, proven


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err and TOKEN not in out.out + out.err
    return code, out.out, out.err


def _one_entry_shards(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Path]:
    """The plan's matrix, and one file per entry as each stack's job writes it."""
    code, out, err = _cli(capsys, "matrix", "--branch", "main", "--fingerprints")
    assert code == 0, err
    (tmp_path / "planned.json").write_text(out, encoding="utf-8")
    files = {}
    for entry in json.loads(out)["include"]:
        files[entry["name"]] = tmp_path / f"{entry['name']}.json"
        files[entry["name"]].write_text(json.dumps({"include": [entry]}), encoding="utf-8")
    return files


def _record_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, shards: dict[str, Path]
) -> Path:
    root, out_dir = tmp_path / "artifacts", tmp_path / "greens"
    proven(root / f"results-{GPU_STACK}", (BASE, DEP))
    proven(root / f"results-{CPU_STACK}", (CPU,))
    for stack, shard in shards.items():
        code, out, err = _cli(
            capsys,
            "mark-green",
            "--shard",
            str(shard),
            "--results-root",
            str(root),
            "--record",
            str(out_dir / f"green-{stack}"),
        )
        assert code == 0, err
        assert "1 of 1 stacks proven" in out, out + err
    return out_dir


def _publish(
    capsys: pytest.CaptureFixture[str], greens: Path, tmp_path: Path, commit: str
) -> tuple[int, str, str]:
    planned = str(tmp_path / "planned.json")
    return _cli(
        capsys, "mark-green", "--publish", str(greens), "--planned", planned, "--commit", commit
    )


def test_recorded_greens_published_in_one_check_run_make_the_next_plan_empty(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scheduled, _ = plan(capsys)
    assert set(scheduled) == {GPU_STACK, CPU_STACK}
    shards = _one_entry_shards(capsys, tmp_path)
    before = len(github.state.requests)
    greens = _record_each(capsys, tmp_path, shards)
    assert len(github.state.requests) == before  # recording asks GitHub nothing
    head = git(repo, "rev-parse", "HEAD")
    code, out, err = _publish(capsys, greens, tmp_path, head)
    assert code == 0, err
    assert "2 stacks of 2 planned published green" in out, out + err
    assert [m for m, _p in github.state.requests[before:]] == ["POST"]
    (check_run,) = github.state.check_runs
    assert check_run["name"] == greens_aggregate.CHECK_NAME
    assert check_run["head_sha"] == head and check_run["app"]["slug"] == "github-actions"
    assert plan(capsys)[0] == {}  # both green: nothing to build
    assert github.statuses(head) == []


def test_a_green_the_plan_did_not_plan_with_that_fingerprint_is_not_published(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A self-hosted leg of the run could upload an artifact named green-X: only a stack
    planned with that very fingerprint counts."""
    shards = _one_entry_shards(capsys, tmp_path)
    greens = _record_each(capsys, tmp_path, shards)
    forged = greens / f"green-{CPU_STACK}" / f"{CPU_STACK}.green"
    forged.write_text(f"{CPU_STACK} nix-{'0' * 32}\n", encoding="utf-8")
    malformed = greens / "green-x" / "x.green"
    malformed.parent.mkdir()
    malformed.write_text("no such thing\n", encoding="utf-8")
    code, out, err = _publish(capsys, greens, tmp_path, git(repo, "rev-parse", "HEAD"))
    assert code == 0, err
    assert f"ci-tools/{CPU_STACK} not planned with that fingerprint" in err
    assert f"{malformed}:1: " in err  # a notice: it costs no other green
    assert "1 stacks of 2 planned published green" in out
    assert set(plan(capsys)[0]) == {CPU_STACK}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--publish", "{tmp}"], "--publish needs --planned FILE"),
        (["--planned", "{tmp}/p.json"], "--planned goes with --publish DIR"),
        (["--record", "{tmp}"], "--record OUT goes with --shard FILE"),
        (["--publish", "{tmp}/nothing", "--planned", "{tmp}/p.json"], "no such folder"),
    ],
)
def test_the_aggregate_forms_say_what_they_need(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    says: str,
) -> None:
    (tmp_path / "p.json").write_text('{"include": []}', encoding="utf-8")
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, _out, err = _cli(capsys, "mark-green", *args)
    assert code == 2 and says in err, err


def test_a_stack_this_fleet_cannot_prove_is_named_and_not_built_again_until_the_fleet_changes(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 28 item 6: the CPU stack's legs passed but its checks were skipped (no runner
    could run them): recorded as unprovable, named in the run's summary, and not planned
    again until runners.yaml changes (before, every push rebuilt it, silently)."""
    write(repo, "runners.yaml", RUNNERS)
    commit_all(repo, "fleet")
    shards = _one_entry_shards(capsys, tmp_path)
    root, out_dir = tmp_path / "artifacts", tmp_path / "greens"
    proven(root / f"results-{GPU_STACK}", (BASE, DEP))
    proven(root / f"results-{CPU_STACK}", (CPU,), (Check(name="cpu-mlp", status=Status.SKIPPED),))
    for shard in shards.values():
        argv = ["--shard", str(shard), "--results-root", str(root), "--record", str(out_dir)]
        assert _cli(capsys, "mark-green", *argv)[0] == 0
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = _publish(capsys, out_dir, tmp_path, git(repo, "rev-parse", "HEAD"))
    assert code == 0, err
    assert "(1 not provable on this fleet)" in out, out
    assert f"- `{CPU_STACK}`" in summary.read_text(encoding="utf-8")
    scheduled, said = plan(capsys)
    assert scheduled == {}, said
    assert "1 stacks not built again" in said and CPU_STACK in said
    write(repo, "runners.yaml", RUNNERS + "# a host joined\n")
    commit_all(repo, "fleet: a host joined")
    assert set(plan(capsys)[0]) == {CPU_STACK}


def test_a_stack_whose_check_failed_is_never_recorded_unprovable(
    repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A failed check (or build) is not "unprovable on this fleet": recorded so, the next
    plan would skip a broken stack until runners.yaml changed (under act, a failed build's
    re-run planned nothing)."""
    write(repo, "runners.yaml", RUNNERS)
    commit_all(repo, "fleet")
    shards = _one_entry_shards(capsys, tmp_path)
    root, out_dir = tmp_path / "artifacts", tmp_path / "greens"
    proven(root / f"results-{CPU_STACK}", (CPU,), (Check(name="cpu-mlp", status=Status.FAILED),))
    argv = ["--shard", str(shards[CPU_STACK]), "--results-root", str(root)]
    assert _cli(capsys, "mark-green", *argv, "--record", str(out_dir))[0] == 0
    assert sorted(p.name for p in out_dir.glob("*")) == []  # neither green nor unprovable


RUNNERS = """\
builders:
  x86_64-linux:
    labels: [self-hosted, Linux, X64, builder-x86_64]
"""
