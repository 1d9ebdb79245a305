"""Which release of each branch the page reads, and what of its asset it believes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, PublishOutcome, PublishStatus, ResultRecord
from ci_tools.ship import released
from ci_tools.ship.released import Listed, Untrusted

COMMIT = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
TAG = "cuda-12_9-1a2b3c4d5e6f"
BRANCHES = ("main", "cuda-12_9", "cuda-13_0")
GPU, CPU, FAILED = "torch-sm90", "torch-cpu", "torch-sm80"
VARIANTS = (GPU, CPU, FAILED)


def _record(name: str, *, status: PublishStatus | None = PublishStatus.PUBLISHED) -> ResultRecord:
    return ResultRecord(
        variant=name,
        package="torch",
        branch="cuda-12_9",
        platform="x86_64-linux",
        commit=COMMIT,
        build=BuildOutcome(status=results.Status.PASSED, seconds=1.0),
        publish=None if status is None else PublishOutcome(status=status, org="acme"),
    )


def _asset() -> dict[str, Any]:
    entries = [
        ("published", _record(GPU)),
        ("published", _record(CPU)),
        ("publish failed", _record(FAILED, status=PublishStatus.FAILED)),
    ]
    return {
        "schema": 2,
        "tag": TAG,
        "branch": "cuda-12_9",
        "commit": COMMIT,
        "variants": [
            {"variant": r.variant, "outcome": outcome, "record": r.to_json()}
            for outcome, r in entries
        ]
        + [{"variant": "torch-unselected", "outcome": "not selected", "record": None}],
    }


def _checked(asset: Any, commit: str | None = COMMIT, org: str = "acme") -> released.Shelf:
    return released.checked(
        asset, tag=TAG, branch="cuda-12_9", commit=commit, variants=VARIANTS, org=org
    )


def test_a_tag_names_its_branch_whatever_dashes_the_branch_has() -> None:
    assert released.branch_of(TAG, BRANCHES) == "cuda-12_9"
    assert released.branch_of("main-1a2b3c4d5e6f", BRANCHES) == "main"
    for tag in ("cuda-12_9-1a2b3c4d5e6", "cuda-12_9-1A2B3C4D5E6F", "v1.0", "other-1a2b3c4d5e6f"):
        assert released.branch_of(tag, BRANCHES) is None, tag


def test_the_newest_release_of_each_branch_and_never_a_draft() -> None:
    listed = [
        Listed(tag="main-bbbbbbbbbbbb", draft=True, created="2026-11-25T00:00:00Z"),
        Listed(tag="main-aaaaaaaaaaaa", draft=False, created="2026-11-20T00:00:00Z"),
        Listed(tag="cuda-12_9-cccccccccccc", draft=False, created="2026-11-01T00:00:00Z"),
        # Listed later but made later: the time decides, not the place in the list.
        Listed(tag="cuda-12_9-dddddddddddd", draft=False, created="2026-11-02T00:00:00Z"),
        Listed(tag="v1.0", draft=False, created="2026-12-01T00:00:00Z"),
        Listed(tag="main-eeeeeeeeeeee", draft=False, created="2026-11-20T00:00:00Z"),
    ]
    assert released.newest(listed, BRANCHES) == {"main": 1, "cuda-12_9": 3}
    # The newest few of each branch, newest first (a tie: the one listed first).
    assert released.recent(listed, BRANCHES, 2) == {"main": [1, 5], "cuda-12_9": [3, 2]}
    assert released.recent(listed, BRANCHES, 1) == {"main": [1], "cuda-12_9": [3]}


def test_a_sound_asset_gives_the_records_published_to_the_org() -> None:
    shelf = _checked(_asset())
    assert [r.variant for r in shelf.records] == [GPU, CPU]
    assert shelf.elsewhere == ()
    other = _checked(_asset(), org="someone-else")
    assert (other.records, other.elsewhere) == ((), (GPU, CPU))


def _tampered(change: str) -> Any:
    asset = _asset()
    entries = asset["variants"]
    if change == "asset commit":
        asset["commit"] = "f" * 40
    elif change == "asset branch":
        asset["branch"] = "main"
    elif change == "asset tag":
        asset["tag"] = "cuda-12_9-ffffffffffff"
    elif change == "record commit":
        entries[0]["record"]["commit"] = "f" * 40
    elif change == "record without commit":
        entries[0]["record"]["commit"] = None
    elif change == "record branch":
        entries[0]["record"]["branch"] = "main"
    elif change == "variant of no branch":
        entries[0]["variant"] = entries[0]["record"]["variant"] = "torch-sm999"
    elif change == "entry names another variant":
        entries[0]["variant"] = CPU
    elif change == "two entries":
        entries.append(copy.deepcopy(entries[0]))
    elif change == "outcome says published, record not":
        entries[2]["outcome"] = "published"
    elif change == "record says published, outcome not":
        entries[0]["outcome"] = "test failed"
    elif change == "published without record":
        entries[0]["record"] = None
    elif change == "malformed record":
        entries[0]["record"]["build"] = "passed"
    elif change == "entry not an object":
        entries[0] = "torch-sm90"
    elif change == "no variants":
        del asset["variants"]
    return asset


CHANGES = {
    "asset commit": "the asset says commit",
    "asset branch": "the asset says branch 'main'",
    "asset tag": "the asset says tag",
    "record commit": "names commit ffff",
    "record without commit": "names no commit",
    "record branch": "(branch main) is not a variant of cuda-12_9",
    "variant of no branch": "torch-sm999 (branch cuda-12_9) is not a variant",
    "entry names another variant": "is for 'torch-cpu', its record for torch-sm90",
    "two entries": "two entries for torch-sm90",
    "outcome says published, record not": "variants[2]: its outcome ('published')",
    "record says published, outcome not": "variants[0]: its outcome ('test failed')",
    "published without record": "is published but has no record",
    "malformed record": "malformed result record",
    "entry not an object": "variants[0] is not an object",
    "no variants": "no `variants` list",
}


@pytest.mark.parametrize("change", CHANGES)
def test_an_asset_that_fails_any_check_is_not_believed(change: str) -> None:
    with pytest.raises(Untrusted) as refused:
        _checked(_tampered(change))
    assert CHANGES[change] in str(refused.value)


def test_the_tag_must_exist_and_name_its_commit() -> None:
    with pytest.raises(Untrusted, match="does not exist"):
        _checked(_asset(), commit=None)
    # Tag `...-1a2b3c4d5e6f` moved to a commit it does not name, and the asset follows it.
    moved = "9" * 40
    asset = dict(_asset(), commit=moved)
    with pytest.raises(Untrusted, match="which that tag does not name"):
        _checked(asset, commit=moved)


def test_this_runs_records_win_for_their_variants() -> None:
    mine = _record(GPU, status=PublishStatus.FAILED)
    other_branch = ResultRecord(**{**_record(GPU).__dict__, "branch": "cuda-13_0"})
    merged = released.merge([mine], [_record(GPU), _record(CPU), other_branch])
    assert [(r.branch, r.variant, r.published) for r in merged] == [
        ("cuda-12_9", CPU, True),
        ("cuda-13_0", GPU, True),
        ("cuda-12_9", GPU, False),
    ]


def test_a_listed_release_of_the_wrong_shape_is_skipped() -> None:
    import datetime
    from types import SimpleNamespace

    from ci_tools.ship import released_fetch

    made = datetime.datetime(2026, 11, 22, 4, 0, tzinfo=datetime.UTC)
    good = SimpleNamespace(tag_name=TAG, draft=False, created_at=made)
    entry = released_fetch._read(good)
    assert entry is not None and entry[0] == Listed(
        tag=TAG, draft=False, created="2026-11-22T04:00:00Z"
    )
    undated = released_fetch._read(SimpleNamespace(tag_name=TAG, draft=True, created_at=None))
    assert undated is not None and undated[0].created == ""
    for bad in (
        SimpleNamespace(tag_name=None, draft=False, created_at=made),
        SimpleNamespace(tag_name=TAG, draft="false", created_at=made),
        SimpleNamespace(tag_name=TAG, created_at=made),  # no draft at all
    ):
        assert released_fetch._read(bad) is None
