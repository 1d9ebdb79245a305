"""Issue 28 item 9, under act: a run killed after some stacks finished keeps their greens.

act cannot cancel a run (act limit 4, tests/act/test_scenarios.py), so the kill is made real
from outside: a push plans two stacks of main's PyTorch (this machine's, so one passes its
checks for real); the other's `flox build` blocks (tests/act/hooks/flox, ACT_HOOK_BLOCK)
until the first stack's mark-green job has uploaded its green, and then the scenario kills
every process of that build step with SIGKILL (tests/act/kill.py), as a runner that loses
its job ends it. The run goes on as GitHub's does: the `greens` job (`always()`) publishes
what finished, and the gate is red. The next push plans only the killed stack.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.act import kill
from tests.act import test_scenarios as scenarios
from tests.act.harness import Scenario, load_yaml, push_event
from tests.act.host_torch import HostTorch
from tests.act.test_scenarios import STUB, new_scenario

# act, and Nix for the flox double and the runners' preflight: as every scenario.
pytestmark = scenarios.pytestmark


def two_new_stacks(s: Scenario) -> str:
    """Main's PyTorch gains the ISAs avx and avx512 (TorchVision's list unchanged): two new
    stacks of one variant each. Returns the commit."""
    catalog = s.work / "catalog.yaml"
    old = "        cpu: [avx2]\n"
    text = catalog.read_text(encoding="utf-8")
    assert old in text, "new_scenario(cpu=['avx2']) did not shape the catalog"
    catalog.write_text(text.replace(old, "        cpu: [avx, avx2, avx512]\n", 1))
    s.ci_tools("generate", "--branch", "main")
    return s.commit({}, "catalog: PyTorch for AVX and AVX-512 on main")


def only_the_plan(s: Scenario) -> dict[str, str]:
    """Every job of ci.yml but `plan` as a passing stub: what the next push plans is the
    claim, and whatever the workflow's other jobs are named, they are not run."""
    jobs = load_yaml(s.work / ".github" / "workflows" / "ci.yml")["jobs"]
    return {job_id: "success" for job_id in jobs if job_id != "plan"}


def test_a_run_killed_after_one_stack_finished_keeps_its_green(
    tmp_path: Path, host: HostTorch
) -> None:
    s = new_scenario(tmp_path, host, cpu=["avx2"])
    before = s.head()
    after = two_new_stacks(s)
    finished, killed = host.stack("avx"), host.stack("avx512")
    blocked = s.tmp / "blocked-build.pid"
    green = s.artifacts / f"green-{finished}"

    def green_uploaded() -> bool:
        return green.is_dir() and any(green.iterdir())

    env = {"ACT_HOOK_BLOCK": host.variant("avx512"), "ACT_HOOK_BLOCKED": str(blocked)}
    with kill.killing(blocked, green_uploaded) as done:
        run = s.act("push", push_event(before, after), "ci.yml", stub=STUB, env=env)
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    fingerprints = {e["name"]: e["fingerprint"] for e in planned.get("include", [])}
    assert set(fingerprints) == {finished, killed}, run.text()[-3000:]
    # The kill was real: the blocked build's whole step, from its shell through
    # `ci-tools build` down to the blocked flox (the hook, a python3 script).
    assert not done.error and done.killed, f"{done}\n{run.text()[-3000:]}"
    pids, commands = [p for p, _ in done.killed], [c for _, c in done.killed]
    assert commands[0] == "bash" and "ci-tools" in commands, done
    assert int(blocked.read_text(encoding="utf-8")) in pids, done
    records = {r["variant"]: r for r in s.records().values()}
    assert records[host.variant("avx")]["test"]["status"] == "passed", records
    # Its "started" record, written before the build: the step died under it.
    assert records[host.variant("avx512")]["build"]["status"] == "started", records
    assert run.result("build-0") == "failure"
    # The finished stack's green is published, the killed one's is not; the gate is red.
    assert run.result("greens") == "success", run.text()[-3000:]
    assert s.github.greens(after, fingerprints) == {finished: fingerprints[finished]}
    assert run.result("gate") == "failure", run.text()[-3000:]

    # The next push (docs only) plans the killed stack alone (`--until-green`).
    docs = s.commit({"docs/notes.md": "words\n"}, "docs only")
    s.flox_log.unlink(missing_ok=True)
    second = s.act("push", push_event(after, docs), "ci.yml", stub=only_the_plan(s))
    again = json.loads(second.step_output("plan", "matrix", "matrix-0") or "{}")
    assert [e["name"] for e in again.get("include", [])] == [killed], second.text()[-3000:]
    assert again["include"][0]["fingerprint"] == fingerprints[killed]
    assert s.built() == []
