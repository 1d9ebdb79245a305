"""Issue 19 item 6 under act: about 1,100 planned stacks converge over three pushes.

A scratch repository whose catalog gives main about 1,100 stacks (Python 3.11-3.13 and
synthetic SMs beside the real ones; recipes generated and committed, as the plan job's
`generate --check` wants). Each push runs ci.yml under act with the real plan job; the build
legs are a light stand-in of build-stack.yml (same interface) whose one step per leg uploads
the stack's record and its green (what `ci-tools mark-green --record` writes) through the
upload-artifact stand-in (artifacts `results-<stack>` and `green-<stack>`). The real mark-green would cost each of the ~1,100 legs a checkout, an install
and a recomputed fingerprint; the scenario checks instead that every green names the stack's
current fingerprint, which is what mark-green checks before it records. The run's real
`greens` job publishes them in one check run (issue 28 item 4), within the GitHub double's
rate limits, and the next push's plan reads them.

Push 1 plans everything, takes what fits (4 x 256 stacks within GitHub's 1 MB of job
outputs) and names the rest as waiting; push 2 and push 3 (docs only) plan only what is not
green; after the third, every stack has run exactly once and nothing is planned.

The `test` and `lint` jobs are stubs, as in test_scenarios.py, and so is `summary` (it would
report on real result records, which light legs do not write). The light legs use no mapped
action (act limit 10 in test_scenarios.py's docstring).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ci_tools.plan import matrix
from tests.act import harness
from tests.act.harness import Scenario, needs_act, push_event

pytestmark = needs_act("nix-instantiate", why="the plan job fingerprints with Nix's parser")

STUB = {"test": "success", "lint": "success", "summary": "success"}
# Synthetic SMs added to main's PyTorch, each with main's six ISAs; with three Pythons main
# then has 3 x (45 + 6 x 54) = 1,107 stacks (45: main's today).
SYNTHETIC_SMS = [f"sm{1000 + n}" for n in range(54)]
PYTHONS = '["3.11", "3.12", "3.13"]'
# GitHub: "Outputs can be a maximum of 1 MB per job ... Size is approximated based on UTF-16
# encoding" ("Passing information between jobs").
JOB_OUTPUT_LIMIT = 1_000_000

# A stand-in for build-stack.yml with the interface ci.yml calls (inputs `entry`, one stack's
# matrix entry, and `mark-green`, the secret NIX_CACHE_SIGNING_KEY), called once per stack.
# Each call writes its stack's record and uploads it as `results-<name>`, then, as its
# mark-green job does, writes its green ("<name> <fingerprint>", what `mark-green --record`
# writes) and uploads it as `green-<name>`, both through the upload stand-in (called
# directly: act limit 10). ci.yml's own `greens` job publishes them.
LIGHT_BUILD_STACK = """\
name: build-stack
on:
  workflow_call:
    inputs:
      ci-tools: {type: string, required: true}
      entry: {type: string, required: true}
      mark-green: {type: boolean, required: false, default: false}
    secrets:
      NIX_CACHE_SIGNING_KEY: {required: false}
permissions: {}
jobs:
  build:
    name: build
    runs-on: ${{ fromJSON(inputs.entry).runs_on }}
    permissions: {}
    steps:
      - env:
          NAME: ${{ fromJSON(inputs.entry).name }}
          FINGERPRINT: ${{ fromJSON(inputs.entry).fingerprint }}
          MARK_GREEN: ${{ inputs.mark-green }}
          INPUT_OVERWRITE: "true"
        run: |
          mkdir -p "$RUNNER_TEMP/r" "$RUNNER_TEMP/g"
          printf '{"stack": "%s", "fingerprint": "%s", "commit": "%s"}\\n' \\
            "$NAME" "$FINGERPRINT" "$GITHUB_SHA" > "$RUNNER_TEMP/r/$NAME.json"
          INPUT_NAME="results-$NAME" INPUT_PATH="$RUNNER_TEMP/r/" \\
            "$LIGHT_PYTHON" "$ACT_STANDIN" upload-artifact
          if [ "$MARK_GREEN" = true ]; then
            printf '%s %s\\n' "$NAME" "$FINGERPRINT" > "$RUNNER_TEMP/g/$NAME.green"
            INPUT_NAME="green-$NAME" INPUT_PATH="$RUNNER_TEMP/g/" \\
              "$LIGHT_PYTHON" "$ACT_STANDIN" upload-artifact
          fi
"""


@pytest.fixture
def long_act_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first push runs 1,024 legs: about a minute on two idle cores, more on a busy
    machine; the harness's limit per act run is for runs of a few jobs."""
    monkeypatch.setattr(harness, "ACT_IDLE_SECONDS", 120.0)


def widen_main(catalog: Path) -> None:
    """Main gains Python 3.11 and 3.12, and its PyTorch the synthetic SMs."""
    text = catalog.read_text(encoding="utf-8")
    gpus = "".join(
        f'  {sm}: {{capability: "{sm[2:-1]}.{sm[-1]}", family: synthetic, hardware: [x]}}\n'
        for sm in SYNTHETIC_SMS
    )
    branches = "\nbranches:\n  main:\n"
    assert text.count(branches) == 1, "catalog.yaml: main is not the first branch"
    start = text.index(branches)
    end = text.index("\n\n  ", start)  # the blank line before the next branch
    main = text[start:end]
    python = '    python: ["3.13"]\n'
    # PyTorch's last SM (TorchVision's list has no darwin_mps after it).
    last_gpu = "          sm120: *six_isas\n        darwin_mps: true\n"
    for anchor in (python, last_gpu):
        assert main.count(anchor) == 1, f"catalog.yaml's main changed: {anchor!r} not found once"
    more = "".join(f"          {sm}: *six_isas\n" for sm in SYNTHETIC_SMS)
    main = main.replace(python, python.replace('["3.13"]', PYTHONS)).replace(
        last_gpu, last_gpu.replace("        darwin", more + "        darwin")
    )
    # The SMs go last in `gpus:`, which `branches:` follows.
    text = text[:start] + "\n" + gpus + main[1:] + text[end:]
    catalog.write_text(text, encoding="utf-8")


@dataclass
class Push:
    """One push's run and what it left: the plan's outputs, its legs, artifacts, statuses."""

    commit: str
    run: harness.Run
    outputs: dict[str, str]  # the plan job's outputs
    planned: list[dict[str, Any]]  # the `planned` artifact's entries
    ran: list[str]  # the build legs' stack names
    artifacts: list[str]
    records: dict[str, dict[str, Any]]  # stack -> its uploaded record


def push(s: Scenario, before: str, after: str, label: str) -> Push:
    # The legs' interpreter named directly: `python3` may be a version manager's shim, whose
    # own start (a shell script) costs more than the stand-in's.
    env = {"LIGHT_PYTHON": sys.executable}
    run = s.act("push", push_event(before, after), "ci.yml", stub=STUB, env=env)
    assert run.result("plan") == "success", run.text()[-3000:]
    names = ("count", "shards", "fingerprint-kind", *(f"matrix-{i}" for i in range(4)))
    outputs = {name: run.step_output("plan", "matrix", name) or "" for name in names}
    outputs["trusted"] = run.step_output("plan", "trust", "trusted") or ""
    planned_file = s.artifacts / "planned" / "planned.json"
    planned = json.loads(planned_file.read_text())["include"]
    legs = [leg for leg in run.legs if leg["top"].startswith("build-") and not leg["stub"]]
    assert all(leg["result"] == "success" for leg in legs), run.text()[-3000:]
    records = {}
    for path in sorted(s.artifacts.glob("results-*/*.json")):
        record = json.loads(path.read_text())
        records[record["stack"]] = record
    artifacts = s.artifact_names()
    # Artifacts belong to their run on GitHub: the next run starts with none.
    s.artifacts.rename(s.tmp / f"artifacts-{label}")
    return Push(
        commit=after,
        run=run,
        outputs=outputs,
        planned=planned,
        ran=[leg["matrix"]["name"] for leg in legs],
        artifacts=artifacts,
        records=records,
    )


def shard_names(outputs: dict[str, str]) -> list[list[str]]:
    return [
        [entry["name"] for entry in json.loads(outputs[f"matrix-{i}"])["include"]] for i in range(4)
    ]


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le"))


def green_statuses(s: Scenario, commit: str, current: dict[str, str]) -> dict[str, str]:
    """stack -> fingerprint of each stack of `current` that the run published green on
    `commit` (its greens check run); no commit status is written any more."""
    assert s.github.statuses(commit) == []
    return s.github.greens(commit, current)


@pytest.mark.usefixtures("long_act_runs")
def test_about_1100_stacks_converge_over_three_pushes(tmp_path: Path) -> None:
    s = Scenario(tmp_path)
    base = s.head()
    widen_main(s.work / "catalog.yaml")
    s.ci_tools("generate", "--branch", "main")
    (s.work / ".github" / "workflows" / "build-stack.yml").write_text(LIGHT_BUILD_STACK)
    first_commit = s.commit({}, "catalog: main for three Pythons and 54 more SMs")
    # Every stack of main with its current fingerprint, as this checkout computes them.
    everything = json.loads(
        s.ci_tools(
            "matrix", "--branch", "main", "--fingerprints", "--fingerprint-kind", "nix"
        ).stdout
    )["include"]
    current = {entry["name"]: entry["fingerprint"] for entry in everything}
    order = [entry["name"] for entry in everything]
    assert 1_050 <= len(current) <= 1_200  # about 1,100 (1,107 with today's catalog)
    capacity = 4 * matrix.SHARD_SIZE

    first = push(s, base, first_commit, "push-1")
    check_first_push(first, order, capacity)
    check_ran_and_marked(s, first, current)

    second_commit = s.commit({"docs/notes.md": "push 2\n"}, "docs: push 2")
    second = push(s, first_commit, second_commit, "push-2")
    waiting = order[capacity:]
    assert second.outputs["count"] == str(len(waiting)), second.run.text()[-3000:]
    assert second.outputs["shards"] == "1"
    assert [e["name"] for e in second.planned] == waiting
    assert "wait for the next run" not in second.run.text()
    # The plan read push 1's greens (not a fallback to --since, which would plan nothing).
    assert f"--until-green: {capacity} of {len(order)} stacks are green" in second.run.text()
    check_ran_and_marked(s, second, current)

    third_commit = s.commit({"docs/notes.md": "push 3\n"}, "docs: push 3")
    third = push(s, second_commit, third_commit, "push-3")
    assert third.outputs["count"] == "0"
    assert f"--until-green: {len(order)} of {len(order)} stacks are green" in third.run.text()
    assert third.planned == [] and third.ran == []
    assert not any(third.run.ran(f"build-{i}") for i in range(4))
    assert third.artifacts == ["planned"]
    assert s.github.statuses(third_commit) == []
    assert not third.run.ran("greens")  # nothing planned, nothing to publish
    assert third.run.result("gate") == "success"

    # Every stack ran exactly once over the three pushes, and is green at its fingerprint.
    ran = Counter(first.ran + second.ran + third.ran)
    assert set(ran) == set(current) and set(ran.values()) == {1}
    greens = {
        **green_statuses(s, first_commit, current),
        **green_statuses(s, second_commit, current),
    }
    assert greens == current


def check_first_push(first: Push, order: list[str], capacity: int) -> None:
    """At most what fits is scheduled, in four shards, within the job output limit; the
    log names what waits."""
    run, outputs = first.run, first.outputs
    text = run.text()
    assert f"--until-green: 0 of {len(order)} stacks are green" in text
    assert outputs["count"] == str(capacity)
    assert outputs["shards"] == "4"
    assert outputs["fingerprint-kind"] == "nix"
    shards = shard_names(outputs)
    assert [len(shard) for shard in shards] == [matrix.SHARD_SIZE] * 4
    assert [name for shard in shards for name in shard] == order[:capacity]
    assert [entry["name"] for entry in first.planned] == order[:capacity]
    assert sum(utf16(value) for value in outputs.values()) < JOB_OUTPUT_LIMIT
    waiting = order[capacity:]
    assert f"{len(waiting)} of {len(order)} stacks wait for the next run" in text
    assert f"Waiting: {', '.join(waiting[:20])} and {len(waiting) - 20} more" in text
    assert "the next push plans them (--until-green" in text
    # Each shard ran as its own build job, every leg of it.
    for index, shard in enumerate(shards):
        legs = [leg["matrix"]["name"] for leg in run.legs if leg["top"] == f"build-{index}"]
        assert sorted(legs) == sorted(shard)
    assert run.result("gate") == "success"


def check_ran_and_marked(s: Scenario, pushed: Push, current: dict[str, str]) -> None:
    """Every planned stack ran once, uploaded its record, and is green on the pushed commit
    at its current fingerprint; nothing else ran."""
    planned = {entry["name"]: entry["fingerprint"] for entry in pushed.planned}
    assert sorted(pushed.ran) == sorted(planned)
    assert pushed.artifacts == sorted(
        ["planned", *(f"{kind}-{name}" for name in planned for kind in ("green", "results"))]
    )
    assert {name: r["fingerprint"] for name, r in pushed.records.items()} == planned
    assert {r["commit"] for r in pushed.records.values()} == {pushed.commit}
    assert green_statuses(s, pushed.commit, current) == planned
    # Within GitHub's limits: one write for the run's greens, nothing refused.
    assert s.github.limits is not None and s.github.limits.refused == []
    assert pushed.run.result("greens") == "success", pushed.run.text()[-3000:]
    assert all(current[name] == fingerprint for name, fingerprint in planned.items())
    assert pushed.run.result("gate") == "success"
