"""Issue 28 item 1, under act: the shipped runners.yaml works as shipped. It names no `cache:`,
so nothing could carry a build from the x86_64 pool into the `gpu-sm90` host's store; a
stack routed to that host (here main's PyTorch for avx512bf16, an ISA the pool's CPUs lack)
is built there and tested there, and the push ends green.

act runs every job on this host, so the runner is a Nix store (tests/act/hooks/
runner_store.py): both legs get the gpu-sm90 host's store, as both run on its labels, and the
scenario's own store stands for the pool's. The assertions read the plan's entry (both legs
on gpu-sm90), the flox calls (the build leg's build, the only one), the two stores (the path
built in the host's, absent from the pool's), the records and the green status.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ci_tools.host import hostcpu
from tests.act import test_fleet_scenario as fleet_scenario
from tests.act.harness import Scenario, pull_request_event, push_event
from tests.act.hooks.runner_store import NIX_CONF
from tests.act.host_torch import HostTorch
from tests.act.test_fleet_scenario import (
    ISA,
    builds_by_job,
    path_info,
    push_of_a_bf16_stack,
    store_env,
)
from tests.act.test_scenarios import STUB, small_preflight

# act, and Nix for the runners' stores and the flox double: as the fleet scenario.
pytestmark = fleet_scenario.pytestmark


def fetched_on(s: Scenario, state: Path, tree: Path) -> None:
    """The runner's store under `state` holds `tree` as a finished fetch leaves it: the
    nixpkgs double downloads nothing, and a real host's build would fetch the source."""
    (state / "etc").mkdir(parents=True, exist_ok=True)
    conf = state / "etc" / "nix.conf"
    if not conf.exists():
        conf.write_text(NIX_CONF, encoding="utf-8")
    subprocess.run(
        ["nix-store", "--add-fixed", "--recursive", "sha256", str(tree)],
        env={**os.environ, **store_env(s, state)},
        capture_output=True,
        check=True,
    )


def test_without_a_cache_the_gpu_host_builds_and_tests_what_it_is_routed(
    tmp_path: Path, host: HostTorch
) -> None:
    if "avx512_bf16" not in hostcpu.read_cpu_flags():
        pytest.skip("the avx512bf16 variant's checks run here: this CPU lacks avx512_bf16")
    s = Scenario(tmp_path / "scenario", env={"NIXPKGS_DOUBLE_PREBUILT": str(host.description)})
    small_preflight(s)
    runners = (s.work / "runners.yaml").read_text()
    assert "\ncache:" not in runners, "the shipped runners.yaml names a cache"
    s.commit({}, "fleet: preflight for this machine")
    before, after = push_of_a_bf16_stack(s, host)
    variant, stack = host.variant(ISA), host.stack(ISA)
    sm90_store = tmp_path / "runner-gpu-sm90"
    fetched_on(s, sm90_store, s.tmp / "pytorch-source" / "source")

    run = s.act(
        "push",
        push_event(before, after),
        "ci.yml",
        stub=STUB,
        env={"ACT_JOB_STORES": json.dumps({"build": str(sm90_store), "test": str(sm90_store)})},
    )
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    (entry,) = planned["include"]
    assert entry["name"] == stack, run.text()[-3000:]
    # No cache: both legs on the gpu-sm90 host, the build with the host's timeout.
    assert entry["runs_on"] == entry["test_runs_on"], entry
    assert "gpu-sm90" in entry["runs_on"] and "builder-x86_64" not in entry["runs_on"]
    assert entry["timeout_minutes"] == entry["test_timeout_minutes"]
    assert entry["test"] == "cpu"
    assert run.result("build-0") == "success", run.text()[-3000:]
    # The build leg built it, once, and pushed it nowhere; the test leg built nothing.
    assert builds_by_job(s) == [("build", variant)]
    (record,) = s.records().values()
    assert record["build"]["status"] == "passed", record["build"]
    assert record["build"].get("cache") is None, record["build"]
    path = record["build"]["store_path"]
    # Built in the host's store; the pool's never had it.
    built_there = path_info(path, store_env(s, sm90_store))
    assert built_there is not None and built_there.get("ultimate") is True, built_there
    in_pool = path_info(path, store_env(s))
    assert in_pool is None or in_pool.get("valid") is False, in_pool
    assert f"{path}: already in this runner's store" in run.text()
    assert "names no cache" not in run.text()
    # Its checks ran for real on the avx512bf16 CPU; the stack is green, and so is the gate.
    assert record["test"]["status"] == "passed", record["test"]
    assert any(c["status"] == "passed" for c in record["test"]["checks"])
    # Published in aggregate by the run's greens job (issue 28 item 4), at its fingerprint.
    assert s.github.greens(after, {stack: entry["fingerprint"]}) == {stack: entry["fingerprint"]}
    assert run.result("greens") == "success", run.text()[-3000:]
    assert run.result("gate") == "success", run.text()[-3000:]


def test_a_pull_request_of_an_sm90_stack_is_built_on_its_test_runner_without_the_key(
    tmp_path: Path, host: HostTorch
) -> None:
    """Issue 28 items 2 and 9: with a cache configured, a pull request's build leg gets no
    signing key (on GitHub it names no environment, and the key is a secret of `nix-cache`);
    its stack is built on its test runner, the gpu-sm90 host, which then tests it from its
    own store, and the pull request ends green. Nothing pushed, nothing signed, the key in no
    record and no log."""
    if "avx512_bf16" not in hostcpu.read_cpu_flags():
        pytest.skip("the avx512bf16 variant's checks run here: this CPU lacks avx512_bf16")
    secret, public = fleet_scenario.keypair(tmp_path)
    cache = tmp_path / "binary-cache"
    s = Scenario(tmp_path / "scenario", env={"NIXPKGS_DOUBLE_PREBUILT": str(host.description)})
    small_preflight(s)
    runners = s.work / "runners.yaml"
    runners.write_text(fleet_scenario.with_cache(runners.read_text(), f"file://{cache}", public))
    s.commit({}, "fleet: the binary cache")
    before, after = push_of_a_bf16_stack(s, host)
    variant, stack = host.variant(ISA), host.stack(ISA)
    sm90_store = tmp_path / "runner-gpu-sm90"
    fetched_on(s, sm90_store, s.tmp / "pytorch-source" / "source")
    event = pull_request_event(9, before, after, fork=False)
    run = s.act(
        "pull_request",
        event,
        "ci.yml",
        stub=STUB,
        # act passes the secret to the run: the workflow must keep it from the legs.
        secrets={fleet_scenario.SECRET: secret},
        env={"ACT_JOB_STORES": json.dumps({"build": str(sm90_store), "test": str(sm90_store)})},
    )
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    (entry,) = planned["include"]
    # The plan routes it as for a push: built on the pool, tested on the sm90 host.
    assert "builder-x86_64" in entry["runs_on"] and "gpu-sm90" in entry["test_runs_on"]
    assert run.result("build-0") == "success", run.text()[-3000:]
    assert builds_by_job(s) == [("build", variant)]
    (record,) = s.records().values()
    # The key reached the build leg empty: nothing pushed, nothing in the cache.
    assert record["build"]["cache"]["status"] == "not-pushed", record["build"]
    assert "no signing key" in record["build"]["cache"]["detail"]
    assert not cache.exists() or not list(cache.glob("*.narinfo"))
    path = record["build"]["store_path"]
    built_there = path_info(path, store_env(s, sm90_store))
    assert built_there is not None and built_there.get("ultimate") is True, built_there
    assert f"{path}: already in this runner's store" in run.text()
    assert record["test"]["status"] == "passed", record["test"]
    # Green on the pull request's head, and the gate too.
    assert s.github.greens(after, {stack: entry["fingerprint"]}) == {stack: entry["fingerprint"]}
    assert run.result("gate") == "success", run.text()[-3000:]
    assert secret.partition(":")[2] not in run.text()
    assert secret.partition(":")[2] not in json.dumps(s.records())
