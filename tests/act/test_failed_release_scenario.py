"""Issue 28 item 5, under act: a release whose every build failed deploys no selector page
(it deployed one listing install lines of variants never published), and its plan computes
fingerprints of CI's kind (Nix's parse), so what a release proves counts for CI's plan."""

from __future__ import annotations

import json
from pathlib import Path

from tests.act import harness
from tests.act import test_scenarios as scenarios
from tests.act.test_scenarios import (
    FLOXHUB_TOKEN,
    RELEASE_STACK,
    new_scenario,
    ready_to_release,
    release_inputs,
)
from tests.doubles.github.server import GitHubDouble

# act, and Nix for the flox double and the plan's parser: as the release scenarios.
pytestmark = scenarios.pytestmark

PYTORCH = "pytorch-python313-cpu-avx2"


def test_a_release_whose_builds_all_failed_deploys_no_page(tmp_path: Path) -> None:
    with GitHubDouble() as github:
        s = new_scenario(tmp_path)
        ready_to_release(s, github)
        run = s.act(
            "workflow_dispatch",
            harness.dispatch_event(release_inputs()),
            "release.yml",
            env={"GITHUB_API_URL": github.url, "FLOX_DOUBLE_FAIL": f"{PYTORCH}=build"},
            secrets=FLOXHUB_TOKEN,
        )
        planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
        (entry,) = planned["include"]
        assert entry["name"] == RELEASE_STACK, run.text()[-3000:]
        # CI's kind: the plan installed Nix's parser, as ci.yml's plan does.
        assert entry["fingerprint"].startswith("nix-"), entry
        assert all(r["build"]["status"] != "passed" for r in s.records().values())
        assert run.result("release") == "failure", run.text()[-3000:]
        assert not [c for c in s.flox_calls() if c["argv"][:1] == ["publish"]]
        # No page of install lines for what was never published.
        assert not run.ran("page"), run.text()[-3000:]
        assert not run.ran("page-deploy")
        assert not (s.pages / "index.html").exists()
