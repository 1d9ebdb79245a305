"""Scenarios: the workflows run for real with act 0.2.89 in host mode, offline (how:
tests/act/harness.py). Each asserts on what the jobs did: the flox log, the artifacts (the
result records), the GitHub double's state, not only on act's exit code.

act's limits (what it does not emulate), found by running 0.2.89 here, and how the suite copes:
1. A failed job inside a reusable workflow (`uses: ./.github/workflows/x.yml`) aborts the
   caller: act's nested plan executor returns the failure as an error
   (pkg/runner/runner.go, `NewPlanExecutor(...).Then(handleFailure(plan))`), so jobs after it
   with `if: ${{ !cancelled() }}` never start, where GitHub runs them. The harness then runs a
   continuation: the same workflow with every job that already ran replaced by a stub that
   replays its outputs and result, so `gate`, `summary` and `release` run as on GitHub.
2. `concurrency:` is ignored (one run at a time here): cancelling a superseded push is not
   exercised; tests/workflows/test_workflows.py checks the group and `cancel-in-progress` statically.
3. `environment:` is accepted and ignored: no protection rules, reviewers or environment
   secrets (the secret comes from `-s`); tests/ship/test_release.py checks statically that the
   publishing jobs name the environment, and tests/workflows/test_workflows.py that only they are
   passed secrets.
4. `timeout-minutes` is not enforced in host mode, and cancelling a run is not emulated: a
   cancelled stack is modelled by tests/act/hooks/flox killing `ci-tools build` with SIGKILL
   mid-stack (what a runner's cancel or timeout does to the step, at its harshest), after
   which the `always()` upload steps run as they do on GitHub. A run killed part-way (a
   runner losing a job after other stacks finished) is made real from outside: the scenario
   kills a blocked build's step with SIGKILL (tests/act/kill.py, test_killed_run_scenario.py).
5. "Re-run failed jobs" does not exist: a re-run is a second act run of the same event against
   the same artifact store (artifacts are per run on GitHub and survive a re-run).
6. Matrix job names take `${{ matrix.* }}` as on GitHub, but act runs a matrix's legs with
   at most 4 in parallel and reports one result per leg; a job's overall result is derived
   here (any failed leg fails the job).
7. No GitHub API: `github.token` is the `-s GITHUB_TOKEN` given; GITHUB_API_URL is pointed at
   the GitHub double (tests/doubles/github). `github.repository` comes from the scratch
   clone's `origin` URL.
8. Host mode shares the machine: no job isolation beyond act's per-job workspace and
   RUNNER_TEMP under XDG_CACHE_HOME (set per scenario here); `runs-on` labels only pick the
   host, so which pool takes a job is checked on the planned matrix, not by act. One Nix store
   serves every job, except where a scenario gives a job a store of its own
   (tests/act/hooks/runner_store.py: test_fleet_scenario.py's test runners).
9. A called workflow gets only the secrets its caller passes (as on GitHub, where a called
   job's `environment:` fills in values but adds no names: actions/runner#1490, #4453), and
   the environment's secret is the `-s` one. Which is why release.yml passes `inherit`.
10. act's LocalRepositoryCache (pkg/runner/local_repository_cache.go) is not safe for many
   matrix legs at once: with 8 parallel legs each running a mapped action, act 0.2.89 once
   died of a Go runtime error there. The 330-stack scenario's light legs call the upload
   stand-in directly; the real build-stack runs 1-2 legs per scenario.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ci_tools.plan import statuses
from ci_tools.ship import manifest, sbom
from tests.act import harness, host_torch
from tests.act.harness import Scenario, needs_act, push_event
from tests.act.host_torch import HostTorch
from tests.doubles.github.server import GitHubDouble

pytestmark = needs_act(
    "nix-instantiate",
    why="the flox double builds with Nix, and the runners' preflight requires it",
)

# The ci-tools suite and the linters are jobs of ci.yml that .ci/run covers; the scenarios
# exercise the pipeline around them, so those two are stubs (passing) here.
STUB = {"test": "success", "lint": "success"}
# One small stack: a CPU variant, built on the x86_64 pool.
VARIANT = "pytorch-python313-cpu-avx2"
STACK = "py313-cpu-avx2"


def small_preflight(scenario: Scenario) -> None:
    """This machine is no builder: the scenario's inventory asks for 1 GiB free, not 60."""
    path = scenario.work / "runners.yaml"
    path.write_text(path.read_text().replace("min_free_gb: 60", "min_free_gb: 1"))


def new_scenario(
    tmp_path: Path, host: HostTorch | None = None, cpu: list[str] | None = None
) -> Scenario:
    """A scratch repository whose every stack earlier CI runs built green at its head (the
    statuses in the scenario's GitHub double), so a push plans only what it changes. With
    `host`, main's PyTorch is this machine's (tests/act/host_torch.py) and passes its tests."""
    env = None if host is None else {"NIXPKGS_DOUBLE_PREBUILT": str(host.description)}
    s = Scenario(tmp_path, env=env)
    small_preflight(s)
    head = s.commit({}, "inventory for a machine that is no builder")
    if host is not None:
        head = host_torch.make_main_host_torch(s, host, cpu)
    seed_greens(s, head)
    return s


def seed_greens(s: Scenario, head: str) -> None:
    """Every stack of main green at HEAD, as earlier CI runs left it (the GitHub double's
    statuses), so a push plans only what it changes."""
    planned = s.ci_tools("matrix", "--branch", "main", "--fingerprints")
    for entry in json.loads(planned.stdout)["include"]:
        s.github.seed_status(
            head,
            "success",
            statuses.context(entry["name"]),
            statuses.description(entry["fingerprint"]),
        )


def catalog_change(s: Scenario) -> dict[str, str]:
    """A change to one recipe's inputs: exactly its stack is planned."""
    recipe = s.work / ".flox" / "pkgs" / f"{VARIANT}.nix"
    return {f".flox/pkgs/{VARIANT}.nix": recipe.read_text() + "# touched\n"}


def test_docs_only_push_plans_nothing_and_the_gate_is_green(tmp_path: Path) -> None:
    s = new_scenario(tmp_path)
    before = s.head()
    after = s.commit({"docs/notes.md": "words\n"}, "docs only")
    run = s.act("push", push_event(before, after), "ci.yml", stub=STUB)
    assert run.result("plan") == "success", run.text()
    assert run.step_output("plan", "matrix", "count") == "0"
    assert not run.ran("build-0")
    assert s.built() == []
    assert run.result("summary") == "success"
    assert "nothing was built" in run.summaries["summary"]
    assert run.result("gate") == "success", run.text()
    assert run.returncode == 0


def add_variant(s: Scenario, packages: int = 1) -> str:
    """A catalog change: main's PyTorch (and with packages=2 its TorchVision) gains the CPU
    ISA avx (recipes regenerated), so exactly one new stack, py313-cpu-avx, is planned."""
    catalog = s.work / "catalog.yaml"
    text = catalog.read_text()
    old = "        cpu: [avx2, avx512, avx512bf16, avx512vnni, armv8_2, armv9]\n"
    assert text.count(old) >= packages
    catalog.write_text(text.replace(old, old.replace("[avx2", "[avx, avx2"), packages))
    s.ci_tools("generate", "--branch", "main")
    return s.commit({}, "catalog: PyTorch for AVX on main")


NEW_VARIANT = "pytorch-python313-cpu-avx"
NEW_STACK = "py313-cpu-avx"


def test_catalog_change_builds_and_tests_exactly_its_stack(tmp_path: Path) -> None:
    s = new_scenario(tmp_path)
    before = s.head()
    after = add_variant(s)
    run = s.act("push", push_event(before, after), "ci.yml", stub=STUB)
    assert run.result("plan") == "success", run.text()
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    assert [e["name"] for e in planned["include"]] == [NEW_STACK]
    assert s.built() == [NEW_VARIANT]
    assert s.artifact_names() == ["planned", f"results-{NEW_STACK}"]
    (record,) = s.records().values()
    assert record["variant"] == NEW_VARIANT
    assert record["build"]["status"] == "passed"
    # The flox double's build is a placeholder output: the test step ran, found no Python in
    # its closure, and recorded that as the failed check.
    assert record["test"]["status"] == "failed"
    assert any(
        c["name"] == "interpreter" and c["status"] == "failed" for c in record["test"]["checks"]
    )
    assert run.result("build-0") == "failure"
    assert run.result("gate") == "failure"
    # The summary lists the stack's variant with the failed check.
    assert run.result("summary") == "success"
    assert NEW_VARIANT in run.summaries["summary"]


@dataclass
class Failed:
    """One push whose only stack failed to build; shared by the scenarios that start there."""

    scenario: Scenario
    event: dict[str, Any]
    run: harness.Run
    records: dict[str, dict[str, Any]]
    built: list[str]


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> Failed:
    s = new_scenario(tmp_path_factory.mktemp("failed"))
    before = s.head()
    after = add_variant(s)
    event = push_event(before, after)
    run = s.act(
        "push", event, "ci.yml", stub=STUB, env={"FLOX_DOUBLE_FAIL": f"{NEW_VARIANT}=build"}
    )
    return Failed(scenario=s, event=event, run=run, records=s.records(), built=s.built())


@pytest.mark.xdist_group("failed")
def test_failing_build_turns_the_gate_red(failed: Failed) -> None:
    run = failed.run
    assert failed.built == [NEW_VARIANT]
    (record,) = failed.records.values()
    assert record["build"]["status"] == "failed"
    assert record.get("test") is None  # not built, so not tested
    assert run.result("build-0") == "failure"
    # act stops the caller after a failed reusable workflow (limit 1): the gate ran on.
    assert run.continued
    assert run.result("gate") == "failure"
    # Which job the gate names is not asserted: act 0.2.89 in host mode sometimes loses the
    # stdout of a step that ends within milliseconds (the gate's lines were missing from its
    # JSON log in some runs, present in others), though the step's result is always there.


def test_fork_pull_request_runs_nothing_on_the_self_hosted_runners(tmp_path: Path) -> None:
    s = new_scenario(tmp_path)
    base = s.head()
    head = add_variant(s)
    event = harness.pull_request_event(7, base, head, fork=True)
    run = s.act("pull_request", event, "ci.yml", stub=STUB)
    assert run.result("plan") == "success", run.text()
    assert run.step_output("plan", "trust", "trusted") == "false"
    assert run.step_output("plan", "matrix", "count") == "1"
    assert not run.ran("build-0")
    assert s.built() == []
    assert run.result("summary") == "success"
    assert "fork" in run.summaries["summary"]
    assert run.result("gate") == "success", run.text()


def test_same_repository_pull_request_builds(tmp_path: Path) -> None:
    s = new_scenario(tmp_path)
    base = s.head()
    head = add_variant(s)
    event = harness.pull_request_event(8, base, head, fork=False)
    run = s.act("pull_request", event, "ci.yml", stub=STUB)
    assert run.step_output("plan", "trust", "trusted") == "true"
    assert s.built() == [NEW_VARIANT]
    assert run.ran("build-0")


@pytest.mark.xdist_group("failed")
def test_rerun_of_a_failed_leg_uploads_its_records_again(failed: Failed) -> None:
    s = failed.scenario
    (record,) = failed.records.values()
    assert record["build"]["status"] == "failed"
    # The re-run: same run, same artifact store; the leg's artifact exists and is replaced.
    second = s.act("push", failed.event, "ci.yml", stub=STUB)
    assert "(409) Conflict" not in second.text(), second.text()
    assert second.result("build-0") is not None
    (record,) = s.records().values()
    assert record["build"]["status"] == "passed"
    assert s.built() == [NEW_VARIANT, NEW_VARIANT]


@pytest.mark.xdist_group("failed")
def test_after_a_failed_build_the_next_docs_only_push_rebuilds_the_stack(failed: Failed) -> None:
    """After the failed push (and the re-run above, whose test fails on the double's
    placeholder build: nothing is green), a docs-only push plans the stack again."""
    s = failed.scenario
    failed_at = failed.event["after"]
    assert failed.run.result("gate") == "failure"
    assert not [st for st in s.github.statuses(failed_at) if NEW_STACK in st["context"]]
    assert not s.github.state.check_runs  # no green published
    docs = s.commit({"docs/notes.md": "words\n"}, "docs only")
    s.flox_log.unlink(missing_ok=True)
    second = s.act("push", push_event(failed_at, docs), "ci.yml", stub=STUB)
    # Nothing of the stack changed since failed_at, and yet it is planned and built again.
    assert s.built() == [NEW_VARIANT]
    assert second.result("build-0") is not None
    (record,) = [r for r in s.records().values() if r["variant"] == NEW_VARIANT]
    assert record["build"]["status"] == "passed"
    assert record["commit"] == docs


def test_cancelled_stack_keeps_the_pytorch_record_and_counts_torchvision_failed(
    tmp_path: Path,
) -> None:
    s = new_scenario(tmp_path)
    before = s.head()
    after = add_variant(s, packages=2)
    torch, vision = NEW_VARIANT, NEW_VARIANT.replace("pytorch-", "torchvision-")
    run = s.act(
        "push", push_event(before, after), "ci.yml", stub=STUB, env={"ACT_HOOK_CANCEL": vision}
    )
    # The hook killed `ci-tools build` when it started flox for TorchVision.
    assert s.built() == [torch, vision]
    records = {r["variant"]: r for r in s.records().values()}
    assert records[torch]["build"]["status"] == "passed"
    # The "started" record written before its build: the job died under it.
    assert records[vision]["build"]["status"] == "started"
    assert run.result("build-0") == "failure"
    assert run.result("gate") == "failure"
    assert vision in run.summaries["summary"]
    assert "never finished" in run.summaries["summary"]


RELEASE_SELECT = "*-python313-cpu-avx2"
RELEASE_STACK = "py313-cpu-avx2"


def release_inputs(select: str = RELEASE_SELECT, dry_run: str = "false") -> dict[str, str]:
    return {"branch": "main", "select": select, "org": "acme", "dry_run": dry_run}


FLOXHUB_TOKEN = {"FLOX_FLOXHUB_TOKEN": "floxhub-scenario-token"}  # the environment's secret


def ready_to_release(s: Scenario, github: GitHubDouble) -> str:
    """What a maintainer does once before the first real release (README, "Before the first
    release"): commit the lock and create the `release` environment (its FloxHub token is
    FLOXHUB_TOKEN, passed to act). Returns the commit with the lock."""
    github.add_environment("release")
    return s.lock_environment()


def release_asset(github: GitHubDouble, commit: str) -> dict[str, Any]:
    tag = f"main-{commit[:12]}"
    raw = github.asset_bytes(tag, f"results-{tag}.json")
    assert raw is not None, github.state.releases
    data = json.loads(raw)
    assert isinstance(data, dict)
    return data


def attested(run: harness.Run) -> set[str]:
    """The variants the attest stand-in took as subjects in `run`."""
    found = re.findall(r"attest stand-in: subject [0-9a-f]{64}  (\S+)", run.text())
    return set(found)


def provenance_of(
    github: GitHubDouble, commit: str, records: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """variant -> sha256 hex of the release's manifest, each checked against its build record
    and its SBOM asset (the same NAR hash)."""
    tag = f"main-{commit[:12]}"
    raw = github.asset_bytes(tag, manifest.manifest_name(tag))
    assert raw is not None, [a["name"] for r in github.state.releases for a in r["assets"]]
    built = {r["variant"]: r["build"] for r in records.values()}
    found = {}
    for entry in manifest.entries(json.loads(raw), "manifest"):
        [output] = built[entry.variant]["outputs"]
        assert (entry.store_path, entry.nar_hash) == (output["store_path"], output["nar_hash"])
        document = github.asset_bytes(tag, sbom.file_name(entry.variant))
        assert document is not None and sbom.top_nar_hash(json.loads(document)) == entry.nar_hash
        assert entry.proven_on and entry.proof, entry
        found[entry.variant] = entry.sha256
    return found


@dataclass
class Released:
    scenario: Scenario
    github: GitHubDouble
    commit: str
    run: harness.Run
    flox_calls: list[dict[str, Any]]


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Released]:
    """One release dispatch of the stack py313-cpu-avx2; shared by the release scenarios."""
    with GitHubDouble() as github:
        s = new_scenario(tmp_path_factory.mktemp("released"))
        commit = ready_to_release(s, github)
        run = s.act(
            "workflow_dispatch",
            harness.dispatch_event(release_inputs()),
            "release.yml",
            env={"GITHUB_API_URL": github.url},
            secrets=FLOXHUB_TOKEN,
        )
        yield Released(scenario=s, github=github, commit=commit, run=run, flox_calls=s.flox_calls())


@pytest.mark.xdist_group("released")
def test_release_dispatch_builds_once_then_tests_and_publishes_then_one_release(
    released: Released,
) -> None:
    run, commit, github = released.run, released.commit, released.github
    assert run.step_output("plan", "commit", "commit") == commit, run.text()
    legs = [leg for leg in run.legs if leg["top"] == "build-0" and leg["matrix"]]
    # The stack's build leg and its test leg (issue 18), one of each.
    assert [leg["matrix"].get("name") for leg in legs] == [RELEASE_STACK] * 2
    assert len({leg["job"] for leg in legs}) == 2
    # The stack's tests failed: its mark-green job did not run (it runs after a passed test
    # only), and the release's greens job published nothing.
    assert [leg["jobID"] for leg in run.legs if leg["top"] == "build-0"] == ["build", "test"]
    assert github.statuses(commit) == [] and github.state.check_runs == []
    calls = [c for c in released.flox_calls if c["argv"][:1] in (["build"], ["publish"])]
    assert {c["head"] for c in calls} == {commit}
    # Each package built once, by the build leg: the test leg built nothing.
    builds = [n for c in calls if c["argv"][:1] == ["build"] for n in c["argv"][1:]]
    assert builds == ["pytorch-python313-cpu-avx2", "torchvision-python313-cpu-avx2"]
    assert run.ran("release")
    # The double's build is a placeholder with no Python: tested and failed, not published.
    records = {r["variant"]: r for r in released.scenario.records().values()}
    assert records["pytorch-python313-cpu-avx2"]["test"]["status"] == "failed"
    assert "pytorch-python313-cpu-avx512" not in records
    # Nothing was published, so there is no release (issue 19): the job is red and says why.
    assert github.state.releases == []
    assert run.result("release") == "failure"
    assert "no release: nothing was published" in run.text()


@pytest.mark.xdist_group("released")
def test_a_release_that_published_nothing_deploys_no_page(released: Released) -> None:
    """Issue 28 item 5: the page follows a successful release only (it was deployed after
    this failed one, listing install lines for nothing published)."""
    run, s = released.run, released.scenario
    assert run.result("release") == "failure"
    assert not run.ran("page") and not run.ran("page-deploy"), run.text()[-3000:]
    assert not (s.pages / "index.html").exists()


@pytest.mark.xdist_group("released")
def test_a_narrower_second_dispatch_builds_only_its_selection(
    released: Released,
) -> None:
    """A second dispatch at the same commit with a narrower selection builds only that. (That
    the release keeps the earlier dispatch's records is shown where something was published:
    test_release_publishes_what_passed_and_a_second_dispatch_publishes_only_the_rest.)"""
    s, github = released.scenario, released.github
    s.artifacts.rename(s.tmp / "artifacts-run-1")  # a new run has its own artifacts
    narrower = release_inputs(select="pytorch-python313-cpu-avx2")
    env = {"GITHUB_API_URL": github.url}
    event = harness.dispatch_event(narrower)
    run = s.act("workflow_dispatch", event, "release.yml", env=env, secrets=FLOXHUB_TOKEN)
    assert s.built().count("torchvision-python313-cpu-avx2") == 1
    assert s.built().count("pytorch-python313-cpu-avx2") == 2
    # Nothing published in either dispatch: still no release.
    assert github.state.releases == []
    assert "no release: nothing was published" in run.text()


def test_push_during_a_dry_run_release_changes_nothing_and_the_dry_run_writes_nothing(
    tmp_path: Path,
) -> None:
    """A push during the release does not change what it builds and judges. And a dry run
    (issue 19 item 5) needs no lock, no environment and no token, and writes nothing: no
    commit status, no release, no publish, no page deployment."""
    with GitHubDouble() as github:
        s = new_scenario(tmp_path)
        planned = s.head()
        moved = s.commit({"docs/notes.md": "pushed during the release\n"}, "a push meanwhile")
        # Back to the planned commit on origin; the hook pushes `moved` when the plan is done,
        # before any build job checks out.
        git_push = ["git", "-C", str(s.work), "push", "-q", "--force", str(s.origin)]
        subprocess.run([*git_push, f"{planned}:refs/heads/main"], check=True)
        statuses_before = json.dumps(github.state.statuses, sort_keys=True)
        run = s.act(
            "workflow_dispatch",
            harness.dispatch_event(release_inputs(dry_run="true")),
            "release.yml",
            env={
                "GITHUB_API_URL": github.url,
                "ACT_HOOK_PUSH": f"{moved} {s.origin} main",
                "ACT_HOOK_PUSH_FROM": str(s.work),
                "ACT_HOOK_PUSH_AFTER": "planned",
                "ACT_HOOK_PUSH_DONE": str(tmp_path / "pushed"),
            },
        )
        assert (tmp_path / "pushed").read_text() == moved
        assert harness.git(s.origin, "rev-parse", "main") == moved
        assert run.step_output("plan", "commit", "commit") == planned
        assert {c["head"] for c in s.flox_calls() if c["argv"][:1] == ["build"]} == {planned}
        # The release job judged the planned commit's records (nothing was published: no
        # release, issue 19), not the commit pushed meanwhile.
        assert run.ran("release")
        assert github.state.releases == []
        assert "variants of main: " in run.text()
        assert {r["commit"] for r in s.records().values()} == {planned}
        # The dry run: the preflight only reported; nothing was written anywhere.
        assert run.result("plan") == "success", run.text()[-3000:]
        assert "release preflight of main: ready (dry run)" in run.text()
        assert json.dumps(github.state.statuses, sort_keys=True) == statuses_before
        assert not [c for c in s.flox_calls() if c["argv"][:1] == ["publish"]]
        assert not run.ran("page-deploy")


def test_a_release_that_could_not_publish_stops_at_the_plan(tmp_path: Path) -> None:
    """Issue 19 item 5: no committed lock, no token, no environment: the plan job fails within
    its preflight, naming each, and nothing is built."""
    with GitHubDouble() as github:
        s = new_scenario(tmp_path)
        run = s.act(
            "workflow_dispatch",
            harness.dispatch_event(release_inputs()),
            "release.yml",
            env={"GITHUB_API_URL": github.url},
        )
        assert run.result("plan") == "failure"
        text = run.text()
        assert "this release could not publish, so nothing is built" in text
        for missing in ("manifest.lock", "FLOX_FLOXHUB_TOKEN", "release"):
            assert missing in text
        assert s.built() == []
        assert github.state.releases == []


# "A stack that passes is marked green and the next push skips it" is held by
# test_killed_run_scenario.py (the finished stack's green is published and the next push plans
# only the killed one); a passing push's green gate by test_gpu_host_scenario.py, and a push
# that changes nothing planning nothing by test_docs_only_push_plans_nothing_and_the_gate_is_green.


def test_a_pull_requests_greens_survive_its_squash_and_its_merge_commit(
    tmp_path: Path, host: HostTorch
) -> None:
    """Issue 19 item 3. The pull request's run checks out GitHub's merge commit, which no
    later run reaches; mark-green records on the pull request's head instead. After a squash
    merge (a new commit whose parent is the base: GitHub associates it with the pull request,
    "List pull requests associated with a commit") and after a merge commit (whose second
    parent is the head), the push's plan finds that green and builds nothing."""
    s = new_scenario(tmp_path, host)
    base = s.head()
    stack = host.stack("avx")
    catalog = s.work / "catalog.yaml"
    old = "        cpu: [avx2, avx512, avx512bf16, avx512vnni, armv8_2, armv9]\n"
    catalog.write_text(catalog.read_text().replace(old, old.replace("[avx2", "[avx, avx2"), 1))
    s.ci_tools("generate", "--branch", "main")
    head = s.commit({}, "catalog: PyTorch for AVX on main", branch="topic")
    # GitHub's merge commit of the pull request, which the run checks out.
    harness.git(s.work, "checkout", "-q", "-B", "main", base)
    harness.git(s.work, "merge", "-q", "--no-ff", "topic", "-m", "Merge head into base")
    merge_ref = s.commit({"docs/pr.md": "checked out\n"}, "the pull request's merge ref")
    event = harness.pull_request_event(8, base, head, fork=False)
    run = s.act("pull_request", event, "ci.yml", stub=STUB)
    assert run.result("build-0") == "success", run.text()[-3000:]
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    fingerprint = planned["include"][0]["fingerprint"]
    assert s.github.greens(head, {stack: fingerprint}) == {stack: fingerprint}
    assert s.github.greens(merge_ref, {stack: fingerprint}) == {}

    def push_plans_nothing(merged: str) -> None:
        s.flox_log.unlink(missing_ok=True)
        harness.git(s.work, "push", "-q", "--force", str(s.origin), f"{merged}:refs/heads/main")
        after = s.act("push", push_event(base, merged), "ci.yml", stub=STUB)
        assert after.step_output("plan", "matrix", "count") == "0", after.text()[-3000:]
        assert s.built() == []

    harness.git(s.work, "checkout", "-q", "-B", "main", base)
    harness.git(s.work, "merge", "-q", "--squash", "topic")
    harness.git(s.work, "commit", "-q", "-m", "catalog: PyTorch for AVX on main (#8)")
    squash = s.head()
    s.github.add_pull(8, head=head, commits=[head], merged=[squash])
    push_plans_nothing(squash)

    harness.git(s.work, "checkout", "-q", "-B", "main", base)
    harness.git(s.work, "merge", "-q", "--no-ff", "topic", "-m", "Merge pull request #9")
    push_plans_nothing(s.head())


def test_release_publishes_what_passed_and_a_second_dispatch_publishes_only_the_rest(
    tmp_path: Path, host: HostTorch
) -> None:
    avx, avx2 = host.variant("avx"), host.variant("avx2")
    with GitHubDouble() as github:
        # Main's PyTorch for this machine's Python, on two ISAs a release of `pytorch-*-cpu-*`
        # selects (and nothing else, to keep the smoke tests to two).
        s = new_scenario(tmp_path, host, cpu=["avx", "avx2"])
        commit = ready_to_release(s, github)
        select = f"pytorch-{host.python_tag}-cpu-*"
        env = {"GITHUB_API_URL": github.url, "FLOX_DOUBLE_FAIL": f"{avx2}=build"}
        token = FLOXHUB_TOKEN
        first = s.act(
            "workflow_dispatch",
            harness.dispatch_event(release_inputs(select)),
            "release.yml",
            env=env,
            secrets=token,
        )
        assert s.built() == [avx, avx2] or s.built() == [avx2, avx], first.text()[-3000:]
        records = {r["variant"]: r for r in s.records().values()}
        assert records[avx]["test"]["status"] == "passed", records[avx]["test"]
        assert records[avx2]["build"]["status"] == "failed"
        published = [c["argv"] for c in s.flox_calls() if c["argv"][:1] == ["publish"]]
        assert published == [["publish", "-o", "acme", avx]], published
        hub = s.floxhub()["acme"]
        assert set(hub) == {avx} and len(hub[avx]) == 1
        assert hub[avx][0]["rev"] == commit and hub[avx][0]["version"] == host.torch
        outcomes = {v["variant"]: v["outcome"] for v in release_asset(github, commit)["variants"]}
        assert outcomes[avx] == "published"
        assert outcomes[avx2] != "published"
        # The release was made with what passed; the job is red because a planned build failed.
        assert first.result("release") == "failure"
        assert "failed: " + avx2 in first.text()
        # What the release published is attested, even by a red release (issue 29 item 4).
        assert first.result("attest") == "success", first.text()[-3000:]
        assert attested(first) == {avx}
        # A release that is no dry run marks what it proved green at the planned commit
        # (each stack's mark-green job, which the release passes `mark-green: true`; the
        # release's greens job publishes them).
        wanted = {
            e["name"]: e["fingerprint"]
            for e in json.loads(first.step_output("plan", "matrix", "matrix-0") or "{}")["include"]
        }
        assert set(github.greens(commit, wanted)) == {host.stack("avx")}, github.state.check_runs

        # The second dispatch: the failure is gone; FloxHub already has avx.
        s.artifacts.rename(tmp_path / "artifacts-run-1")
        s.flox_log.rename(tmp_path / "flox-calls-run-1.log")
        second = s.act(
            "workflow_dispatch",
            harness.dispatch_event(release_inputs(select)),
            "release.yml",
            env={"GITHUB_API_URL": github.url},
            secrets=token,
        )
        # The release of this commit records avx as published to acme: the plan skips it, so
        # only avx2 is built, tested and published.
        planned = json.loads(second.step_output("plan", "matrix", "matrix-0") or "{}")
        assert [e["packages"] for e in planned["include"]] == [[avx2]], second.text()[-3000:]
        assert s.built() == [avx2]
        published = [c["argv"] for c in s.flox_calls() if c["argv"][:1] == ["publish"]]
        assert published == [["publish", "-o", "acme", avx2]]
        after = s.floxhub()["acme"]
        assert after[avx] == hub[avx]
        assert len(after[avx2]) == 1 and after[avx2][0]["rev"] == commit
        (made,) = github.state.releases
        outcomes = {v["variant"]: v["outcome"] for v in release_asset(github, commit)["variants"]}
        assert outcomes[avx] == "published"
        assert outcomes[avx2] == "published"
        assert avx in made["body"] and avx2 in made["body"]
        # The bytes bound to their proof (issue 29 items 2-4): the manifest lists both published
        # variants with the NAR hash their build recorded, the release carries the SBOM of
        # each, and the attestation's subjects are exactly them, digests and all.
        bound = provenance_of(github, commit, {**records, **s.records()})
        assert set(bound) == {avx, avx2}, bound
        assert second.result("attest") == "success", second.text()[-3000:]
        assert attested(second) == {avx, avx2}
        assert all(f"attest stand-in: subject {h}  {n}" in second.text() for n, h in bound.items())
        # The first release failed (a build failed), so only this one deployed the page.
        assert not first.ran("page")
        assert second.result("release") == "success", second.text()[-3000:]
        assert second.result("page-deploy") == "success", second.text()[-3000:]
        assert second.step_output("page-deploy", "deployment", "page_url") == (
            f"https://{harness.REPOSITORY.replace('/', '.github.io/', 1)}/"
        )
        page = (s.pages / "index.html").read_text(encoding="utf-8")
        assert f"flox install acme/{avx2}" in page
        assert f'"main/{avx2}":{{"sizes"' in page

        # Issue 28 item 9: the two releases' greens (two check runs on the planned commit,
        # read with filter=all) are of CI's kind: CI's plan of the same entries (the release
        # built PyTorch, not each stack's TorchVision: a push's whole stacks are other
        # entries, with other fingerprints) finds them green and plans nothing.
        assert len(github.state.check_runs) == 2
        docs = s.commit({"docs/notes.md": "after the release\n"}, "docs only")
        env = {
            **os.environ,
            "PYTHONPATH": str(s.work),
            "GITHUB_TOKEN": "ghs_plan",
            "GITHUB_REPOSITORY": harness.REPOSITORY,
            "GITHUB_API_URL": github.url,
        }
        argv = ["matrix", "--branch", "main", "--select", select, "--until-green"]
        plan = subprocess.run(
            ["python3", "-m", "ci_tools", *argv, "--fingerprint-kind", "nix"],
            cwd=s.work,
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        assert json.loads(plan.stdout)["include"] == [], plan.stderr
        assert "--until-green: 2 of 2 stacks are green" in plan.stderr, plan.stderr
        assert harness.git(s.work, "rev-parse", "HEAD") == docs


# A stand-in for build-stack.yml with its interface, called once per stack, whose one job
# only uploads a record: the 330-stack scenario exercises the sharding of ci.yml, not 330
# builds.
LIGHT_BUILD_STACK = """\
name: build-stack
on:
  workflow_call:
    inputs:
      ci-tools: {type: string, required: true}
      entry: {type: string, required: true}
jobs:
  build:
    name: build
    runs-on: ${{ fromJSON(inputs.entry).runs_on }}
    steps:
      - env:
          NAME: ${{ fromJSON(inputs.entry).name }}
        run: |
          mkdir -p "$RUNNER_TEMP/r"
          printf '{"stack": "%s"}\\n' "$NAME" > "$RUNNER_TEMP/r/$NAME.json"
      # The upload stand-in called directly: act's LocalRepositoryCache is not safe for
      # many parallel legs (limit 10).
      - env:
          INPUT_NAME: results-${{ fromJSON(inputs.entry).name }}
          INPUT_PATH: ${{ runner.temp }}/r/
        run: python3 "$ACT_STANDIN" upload-artifact
"""


def test_330_stacks_run_as_2_shards_with_unique_names_and_a_green_gate(tmp_path: Path) -> None:
    """Issue 19 item 2: the gate put `toJSON(needs)`, the plan's matrices included, into one
    variable; past about 300 stacks bash could not start ("argument list too long"). It reads
    each job's result now, and stays green at 330."""
    from ci_tools.plan import sharding

    s = new_scenario(tmp_path)
    entry = json.loads(
        subprocess.run(
            ["python3", "-m", "ci_tools", "matrix", "--branch", "main", "--select", VARIANT],
            cwd=s.work,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["include"][0]
    rows = [{**entry, "name": f"{entry['name']}-{n:03d}"} for n in range(330)]
    outputs = {**sharding.github_outputs(rows), "trusted": "true"}
    light = LIGHT_BUILD_STACK
    before = s.head()
    after = s.commit({".github/workflows/build-stack.yml": light}, "light build-stack")
    run = s.act(
        "push",
        push_event(before, after),
        "ci.yml",
        stub={**STUB, "summary": "success"},
        stub_outputs={"plan": outputs},
    )
    assert outputs["shards"] == "2"
    first, second = (
        [leg["matrix"]["name"] for leg in run.legs if leg["top"] == top]
        for top in ("build-0", "build-1")
    )
    assert len(first) == 165 and len(second) == 165, run.text()[-3000:]
    assert len(set(first) | set(second)) == 330
    assert not run.ran("build-2") and not run.ran("build-3")
    assert len({leg["job"] for leg in run.legs if leg["top"].startswith("build-")}) == 330
    # Each leg's own outcome first, with its log: a leg that failed (an upload refused, a
    # step that did not start) or an artifact missing names itself, not only a count.
    failed = [leg["matrix"]["name"] for leg in run.legs if leg["result"] != "success"]
    missing = sorted({f"results-{n}" for n in first + second} - set(s.artifact_names()))
    assert not failed and not missing, legs_report(run, failed, missing)
    assert set(s.artifact_names()) == {f"results-{n}" for n in first + second}
    assert run.result("gate") == "success"


def legs_report(run: harness.Run, failed: list[str], missing: list[str]) -> str:
    names = {*failed, *(m.removeprefix("results-") for m in missing)}
    lines = [line for line in run.log if any(name in line for name in names)]
    return f"legs failed: {failed}; artifacts missing: {missing}; their log lines:\n" + "\n".join(
        lines[-200:]
    )
