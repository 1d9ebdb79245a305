"""Rebuild until green: `ci-tools matrix --until-green` reads the greens `mark-green` records,
through PyGithub, from the GitHub API double (tests/doubles/github), on a real git repository.

What GitHub does that these rely on, each modelled by the double with its source:
* a status's `creator` is the identity whose token posted it; GITHUB_TOKEN's is
  `github-actions[bot]` ("Commit statuses": the status object's `creator`);
* "List pull requests associated with a commit" (`GET .../commits/{sha}/pulls`) answers,
  for a commit on the default branch, "the merged pull request that introduced the commit":
  a squash merge's commit, a merge commit, or a rebased commit;
* "List commits on a pull request" lists at most 250 of them, oldest first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.plan import statuses
from ci_tools.plan.changes import since
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.fingerprint import Fingerprinter
from ci_tools.plan.nixinputs import NixReader
from tests.doubles.github.server import READ_ONLY, GitHubDouble
from tests.gitutil import commit_all, git, write
from tests.greens import (
    CPU,
    CPU_STACK,
    GPU_STACK,
    TORCH,
    docs_push,
    green,
    plan,
    statuses_on,
)


def test_failed_stack_is_rescheduled_until_green(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
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
    (status,) = github.statuses(git(repo, "rev-parse", "HEAD~1"))
    assert (status["context"], status["description"], status["state"]) == (
        f"ci-tools/{GPU_STACK}",
        f"inputs {second[GPU_STACK]}",
        "success",
    )
    assert status["creator"]["login"] == "github-actions[bot]"


def test_revert_to_a_green_state_schedules_nothing(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
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


def test_docs_push_after_green_costs_five_requests(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = plan(capsys)
    for stack, fingerprint in first.items():
        green(capsys, stack, fingerprint, repo)
    docs_push(repo, "# builds\nagain\n")
    before = len(github.state.requests)
    assert plan(capsys)[0] == {}
    # HEAD's aggregate greens and statuses (none yet), the pull requests that brought HEAD
    # (none), then its parent's aggregate greens (none: these greens are statuses) and
    # statuses: every stack answered.
    head, parent = git(repo, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD~1")
    assert [p.split("/")[-2:] for _m, p in github.state.requests[before:]] == [
        [head, "check-runs"],
        ["statuses", head],
        [head, "pulls"],
        [parent, "check-runs"],
        ["statuses", parent],
    ]


def test_lookback_is_bounded_by_commits_and_calls(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = plan(capsys)
    for stack, fingerprint in first.items():
        green(capsys, stack, fingerprint, repo)
    for n in range(3):
        docs_push(repo, f"# builds {n}\n")
    before = len(github.state.requests)
    scheduled, err = plan(capsys, "--max-api-calls", "2")
    assert set(scheduled) == {GPU_STACK, CPU_STACK}  # not found within 2 calls: built again
    assert len(github.state.requests) - before == 2
    assert "stopped at --max-api-calls 2" in err
    assert set(plan(capsys, "--lookback", "3")[0]) == {GPU_STACK, CPU_STACK}
    assert plan(capsys, "--lookback", "4")[0] == {}


def test_without_a_token_falls_back_to_since_with_a_notice(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    docs_push(repo, "# builds\nx\n")
    scheduled, err = plan(capsys, "--since", "HEAD~1")
    assert scheduled == {}
    assert "no GitHub token" in err and "scheduling by --since HEAD~1" in err
    assert github.state.requests == []
    everything, err = plan(capsys)
    assert set(everything) == {GPU_STACK, CPU_STACK}
    assert "scheduling by the full matrix" in err


def test_a_permanent_api_error_falls_back_with_a_warning(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_revoked")
    github.revoke("ghs_revoked")
    scheduled, err = plan(capsys, "--since", "HEAD")
    assert scheduled == {}
    assert "cannot read the green records" in err and "ghs_revoked" not in err


# --- greens that survive a merge (issue 19 item 3) ---------------------------------------


def _pull_request(repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str]]:
    """A pull request changing the CPU recipe in two pushes, each run marking green what it
    built on the pull request's head commit (as the workflow does, from the event); then
    main moves on. Returns the base branch and the pull request's commits, oldest first."""
    git(repo, "checkout", "-q", "-b", "fix")
    write(repo, f".flox/pkgs/{CPU}.nix", TORCH.replace("X=1", "Y=3"))
    first = commit_all(repo, "fix the cpu recipe")
    planned, _ = plan(capsys, "--branch", "main")
    for stack, fingerprint in planned.items():  # both: nothing was green before
        green(capsys, stack, fingerprint, repo)
    second = docs_push(repo, "# builds\nfix notes\n")  # builds nothing: all green at `first`
    assert plan(capsys, "--branch", "main")[0] == {}
    git(repo, "checkout", "-q", "main")
    write(repo, "CHANGES.md", "meanwhile\n")
    commit_all(repo, "docs on main meanwhile")
    return "main", [first, second]


def test_after_a_merge_commit_the_pull_requests_greens_count(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    base, commits = _pull_request(repo, capsys)
    git(repo, "merge", "-q", "--no-ff", "--no-edit", "fix")
    github.add_pull(7, head=commits[-1], commits=commits, merged=[git(repo, "rev-parse", "HEAD")])
    scheduled, err = plan(capsys, "--branch", base)
    assert scheduled == {}
    assert "2 of 2 stacks are green" in err


def test_after_a_squash_merge_the_pull_requests_greens_count(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    base, commits = _pull_request(repo, capsys)
    git(repo, "merge", "-q", "--squash", "fix")
    squash = commit_all(repo, "fix the cpu recipe (#8)")
    # A squash commit's parents do not include the pull request's commits.
    assert commits[0] not in git(repo, "rev-list", "HEAD")
    assert plan(capsys, "--branch", base)[0] != {}  # unknown to GitHub: nothing associated
    github.add_pull(8, head=commits[-1], commits=commits, merged=[squash])
    scheduled, err = plan(capsys, "--branch", base)
    assert scheduled == {}
    assert "2 of 2 stacks are green" in err and "of associated pull requests" in err
    # The greens sit on the pull request's first commit: its later push built nothing.
    assert {c for c, _ in statuses_on(github, commits[0])} == {
        f"ci-tools/{CPU_STACK}",
        f"ci-tools/{GPU_STACK}",
    }


def test_after_a_rebase_merge_the_pull_requests_greens_count(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    base, commits = _pull_request(repo, capsys)
    git(repo, "cherry-pick", *commits)
    rebased = git(repo, "rev-list", "--reverse", "HEAD~2..HEAD").split()
    assert not set(rebased) & set(commits)
    github.add_pull(9, head=commits[-1], commits=commits, merged=rebased)
    scheduled, err = plan(capsys, "--branch", base)
    assert scheduled == {}
    assert "2 of 2 stacks are green" in err


# --- trusted statuses only (issue 19 item 4) ---------------------------------------------


def test_statuses_of_another_creator_are_ignored_with_a_notice(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = plan(capsys)
    head = git(repo, "rev-parse", "HEAD")
    github.grant("ghp_mallory", login="mallory", kind="User")
    for stack, fingerprint in first.items():
        github.seed_status(
            head,
            "success",
            statuses.context(stack),
            statuses.description(fingerprint),
            token="ghp_mallory",
        )
    scheduled, err = plan(capsys)
    assert scheduled == first  # forged greens skip nothing
    assert "not created by github-actions[bot]: mallory (2)" in err
    # A workflow that records greens as its own app names it, and only it counts.
    github.grant("ghs_app", login="builds-app[bot]")
    github.seed_status(
        head,
        "success",
        statuses.context(CPU_STACK),
        statuses.description(first[CPU_STACK]),
        token="ghs_app",
    )
    trusted, _ = plan(capsys, "--trusted-creator", "builds-app[bot]")
    assert trusted == {GPU_STACK: first[GPU_STACK]}


def test_a_bad_trusted_creator_is_bad_input(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ci_tools import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["matrix", "--until-green", "--trusted-creator", "a b"])
    assert exited.value.code == 2
    assert "is not a GitHub login" in capsys.readouterr().err


# --- one kind of fingerprint (issue 19 item 1) -------------------------------------------


def test_greens_of_another_kind_are_never_compared(
    repo: Path, github: GitHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    raw, _ = plan(capsys, "--fingerprint-kind", "raw")
    assert all(f.startswith("raw-") for f in raw.values())
    for stack, fingerprint in raw.items():
        green(capsys, stack, fingerprint, repo)
    assert plan(capsys, "--fingerprint-kind", "raw")[0] == {}
    # The same greens, but with the digest a nix plan would compare: still another kind.
    head = git(repo, "rev-parse", "HEAD")
    for stack, fingerprint in raw.items():
        github.seed_status(
            head,
            "success",
            statuses.context(stack),
            statuses.description(fingerprint.removeprefix("raw-")),  # an older ci-tools'
        )
    if NixReader().use_nix:
        nix, err = plan(capsys, "--fingerprint-kind", "nix")
        assert set(nix) == {GPU_STACK, CPU_STACK}
        assert "ignored green statuses of another fingerprint kind (2 of kind none, 2 of " in err
        assert "kind raw)" in err


def test_nix_fingerprints_without_nix_are_bad_input(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ci_tools import cli

    monkeypatch.setenv("PATH", str(repo / "no-such-folder"))
    assert cli.main(["matrix", "--fingerprints", "--fingerprint-kind", "nix"]) == 2
    assert "nix-instantiate is not on PATH" in capsys.readouterr().err


def test_since_refuses_to_compare_two_kinds(repo: Path) -> None:
    checkout = Checkout(root=repo)
    stacks = {CPU_STACK: (CPU,)}
    facts = {CPU: CPU}
    raw = Fingerprinter(NixReader(use_nix=False))
    head = raw.stacks(checkout.head, stacks, facts)
    same = since(
        checkout, "HEAD", stacks=stacks, head=head, fingerprinter=raw, facts_at=lambda _c: facts
    )
    assert same.stacks == frozenset()
    other = Fingerprinter(NixReader(use_nix=True))
    if other.kind is raw.kind:
        pytest.skip("nix-instantiate is not installed: only one kind here")
    mixed = since(
        checkout, "HEAD", stacks=stacks, head=head, fingerprinter=other, facts_at=lambda _c: facts
    )
    assert mixed.stacks is None  # everything, and said why
    assert mixed.notice is not None and "never compared" in mixed.notice


def test_read_only_is_the_doubles_fork_token(github: GitHubDouble) -> None:
    """The identity the mark-green tests use for a fork's GITHUB_TOKEN cannot write."""
    github.grant("ghs_fork", permissions=READ_ONLY)
    assert not github.identity("ghs_fork").may("statuses", "write")


def test_without_pull_requests_read_the_commits_still_count(
    repo: Path,
    github: GitHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plan job without `pull-requests: read`: GitHub refuses the pull request reads; the
    greens on the commits HEAD reaches still count, and the notice says what is missing."""
    first, _ = plan(capsys)
    for stack, fingerprint in first.items():
        green(capsys, stack, fingerprint, repo)
    docs_push(repo, "# builds\nlater\n")
    github.grant("ghs_no_pulls", permissions={"statuses": "read", "contents": "read"})
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_no_pulls")
    scheduled, err = plan(capsys)
    assert scheduled == {}
    assert "pull requests not read (GitHub refused to list the pull requests of" in err
    assert "HTTP 403" in err and "needs `pull-requests: read`" in err
