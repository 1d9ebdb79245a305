"""Issue 28 item 4: a push of 1,100 stacks stays within GitHub's REST limits (the double
enforces them: tests/doubles/github/limits.py) and loses no green.

One commit status per stack, as each stack's job wrote it, is refused past 80 writes a minute
(and 500 an hour); the aggregate (`greens_aggregate`: one check run for up to 1,985 stacks)
writes once, and `--until-green`'s reader finds all 1,100 in one request a commit.
"""

from __future__ import annotations

import dataclasses
import hashlib

from ci_tools.base import github_api
from ci_tools.base.retry import RetryPolicy
from ci_tools.plan import greens_aggregate, kinds, statuses
from tests.doubles.github.server import GitHubDouble

STACKS = 1_100
SHA = "a" * 40
# No waiting: a refusal is counted, never slept through.
POLICY = RetryPolicy(attempts=1, total_seconds=60.0, sleep=lambda _s: None)


def wanted(count: int = STACKS) -> dict[str, str]:
    """stack -> a fingerprint of CI's kind."""
    kind = kinds.FingerprintKind.NIX.value
    return {
        f"py313-stack{n:04d}": f"{kind}-{hashlib.sha256(str(n).encode()).hexdigest()[:32]}"
        for n in range(count)
    }


def api(double: GitHubDouble) -> github_api.Api:
    settings = github_api.Settings(
        token="ghs_budget", api_url=double.url, repository=double.repository
    )
    return github_api.connect_lazy(settings, POLICY, lambda _line: None)


def test_aggregate_greens_of_1100_stacks_are_written_and_read_within_githubs_limits() -> None:
    greens = wanted()
    with GitHubDouble() as double:
        refused = greens_aggregate.publish(api(double), commit=SHA, greens=greens, target_url=None)
        found = statuses.find_green(api(double), [(SHA, 1)], greens, kind=kinds.FingerprintKind.NIX)
        limits = double.limits
        assert limits is not None
        assert refused == [] and limits.refused == []
        assert found.green == frozenset(greens), len(found.green)  # 0 lost
        assert found.complete
        # One write; one read of the commit's check runs answers every stack.
        posts = [r for r in double.state.requests if r[0] == "POST"]
        assert len(posts) == 1 and found.calls == 1


def test_one_status_per_stack_is_refused_past_the_secondary_limit() -> None:
    """What each stack's job did before: its own commit status. GitHub refuses the 81st write
    of a minute (429, retry-after); a green not written is a stack built again."""
    greens = wanted(120)
    with GitHubDouble() as double:
        client = api(double)
        lost = [
            stack
            for stack, fp in greens.items()
            if statuses.mark_green(client, commit=SHA, stack=stack, fingerprint=fp, target_url=None)
        ]
        assert double.limits is not None
        assert len(lost) == 40, lost[:3]
        assert {status for _m, _p, status in double.limits.refused} == {429}


def test_greens_beyond_one_check_run_are_chunked_and_all_read() -> None:
    """Past 1,985 stacks the text would outgrow GitHub's 65,535 characters: more check runs
    of the same name, which the reader lists with filter=all (the default lists only the
    latest of a name)."""
    greens = wanted(2_500)
    assert [len(t) <= 65_535 for t in greens_aggregate.texts(greens)] == [True, True]
    with GitHubDouble() as double:
        assert (
            greens_aggregate.publish(api(double), commit=SHA, greens=greens, target_url=None) == []
        )
        found = statuses.find_green(api(double), [(SHA, 1)], greens, kind=kinds.FingerprintKind.NIX)
        assert found.green == frozenset(greens)


def test_check_runs_of_another_app_are_not_trusted() -> None:
    greens = wanted(3)
    with GitHubDouble() as double:
        double.grant("ghs_budget", login="mallory-app[bot]")
        assert (
            greens_aggregate.publish(api(double), commit=SHA, greens=greens, target_url=None) == []
        )
        found = statuses.find_green(api(double), [(SHA, 1)], greens, kind=kinds.FingerprintKind.NIX)
        assert found.green == frozenset()
        assert found.untrusted == {"(check runs of another app)": 1}


def test_the_double_refuses_past_the_primary_limit_with_githubs_headers() -> None:
    """GITHUB_TOKEN: 1,000 requests an hour per repository; then 403 with remaining 0 until
    x-ratelimit-reset, after which a new window starts ("Rate limits for the REST API")."""
    now = [1_000_000.0]
    with GitHubDouble() as double:
        assert double.limits is not None
        double.limits = dataclasses.replace(double.limits, clock=lambda: now[0])
        for _ in range(1_000):
            assert double.limits.admit("GET", "/x").status == 0
        refused = double.limits.admit("GET", "/x")
        assert refused.status == 403
        assert refused.headers["x-ratelimit-remaining"] == "0"
        assert refused.headers["x-ratelimit-reset"] == str(1_000_000 + 3600)
        now[0] += 3600
        assert double.limits.admit("GET", "/x").status == 0


def test_the_double_refuses_the_81st_write_of_a_minute_and_the_501st_of_an_hour() -> None:
    now = [0.0]
    with GitHubDouble() as double:
        assert double.limits is not None
        limits = dataclasses.replace(double.limits, clock=lambda: now[0])
        for _ in range(80):
            assert limits.admit("POST", "/x").status == 0
        refused = limits.admit("POST", "/x")
        assert (refused.status, refused.headers["retry-after"]) == (429, "60")
        assert limits.admit("GET", "/x").status == 0  # reads are not content-creating
        for minute in range(1, 7):
            now[0] = 60.0 * minute
            for _ in range(80 if minute < 6 else 20):
                assert limits.admit("POST", "/x").status == 0
        now[0] = 60.0 * 7
        assert limits.admit("POST", "/x").status == 429  # 500 this hour
