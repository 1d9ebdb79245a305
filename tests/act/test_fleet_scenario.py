"""Issue 18 item 6, under act: build once on the builder pool, test where the hardware is,
through a real `file://` binary cache that the jobs' stores share; and a variant that no
runner of the fleet can run, published on its static proofs.

The fleet here: runners.yaml as shipped (an x86_64 pool whose CPUs lack avx512_bf16, and a
test runner labelled `gpu-sm90` whose CPU has it) plus `cache:` naming a `file://` binary
cache and the fleet's real key pair (`nix-store --generate-binary-cache-key`): the cache is
what splits the legs (without one the gpu-sm90 host builds what it tests,
tests/act/test_gpu_host_scenario.py). act runs every
job on this host (its limit 8), so each test leg's Nix store is a store of its own: its own
database, logs and nix.conf at the builders' store directory (tests/act/hooks/runner_store.py),
where a path is valid only once built or copied there. What the assertions read:
* tests/act/hooks/flox logs each flox call with its job: every `flox build` is the build
  leg's;
* the test leg's store has the closure as Nix records a substituted path: not `ultimate`
  (built there) and carrying the fleet key's signature, which only the cache's narinfo gave it;
* the records, FloxHub (the flox double) and the release's notes.
Main's PyTorch is this machine's CPU torch (tests/act/host_torch.py), so the checks run for
real on the test leg; the scenario needs a CPU with avx512_bf16 for the routed run. For the
static proofs, the torch the build holds is that torch with a small libtorch_cpu.so assembled
with `as` (a dispatched AVX-512 kernel with vdpbf16ps, torch's own code within AVX2): objdump
reads all of a real one in minutes (197 s here under load); the scanner on the real wheel's
library is tests/build/test_isa.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ci_tools.host import hostcpu
from ci_tools.plan import statuses
from tests.act import harness, host_torch
from tests.act.harness import Scenario, needs_act, push_event
from tests.act.host_torch import HostTorch
from tests.act.test_scenarios import (
    FLOXHUB_TOKEN,
    STUB,
    ready_to_release,
    release_asset,
    release_inputs,
    small_preflight,
)
from tests.build.test_isa import AVX512_KERNEL, assemble

pytestmark = needs_act(
    "nix", "nix-instantiate", why="the binary cache and the flox double need Nix"
)

ISA = "avx512bf16"
KEY_NAME = "fleet-1"
SECRET = "NIX_CACHE_SIGNING_KEY"
TEST_RUNNERS_HEADER = "test_runners:\n"


def keypair(folder: Path) -> tuple[str, str]:
    secret, public = folder / "fleet.sec", folder / "fleet.pub"
    subprocess.run(
        ["nix-store", "--generate-binary-cache-key", KEY_NAME, str(secret), str(public)],
        check=True,
    )
    return secret.read_text().strip(), public.read_text().strip()


def with_cache(runners: str, url: str, public: str) -> str:
    return (
        runners
        + f'\ncache:\n  url: "{url}"\n  public_keys: ["{public}"]\n'
        + f"  signing_key_secret: {SECRET}\n"
    )


def without_test_runners(runners: str) -> str:
    """The inventory once the sm90 host is gone: no runner's CPU has avx512_bf16."""
    head, found, rest = runners.partition(TEST_RUNNERS_HEADER)
    assert found, "runners.yaml has no test_runners"
    tail = rest[rest.index("\ncache:") :] if "\ncache:" in rest else ""
    return head + tail


def store_env(scenario: Scenario, state: Path | None = None) -> dict[str, str]:
    """The scenario's builder store, or a test runner's store kept under `state`."""
    env = {**scenario.nix_store_env()}
    if state is not None:
        env.update(
            NIX_STATE_DIR=str(state / "var"),
            NIX_LOG_DIR=str(state / "log"),
            NIX_CONF_DIR=str(state / "etc"),
        )
    return env


def path_info(path: str, env: dict[str, str]) -> dict[str, Any] | None:
    done = subprocess.run(
        ["nix", "--extra-experimental-features", "nix-command", "path-info", "--json", path],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    data = json.loads(done.stdout)
    # Nix 2.18 answers a list of objects with "path"; later ones an object keyed by path.
    info = data[0] if isinstance(data, list) else data.get(path)
    return info if isinstance(info, dict) else None


def small_torch(folder: Path, host: HostTorch) -> Path:
    """A prebuilt description (tests/nix/nixpkgs-double/prebuilt.py) whose torch package is a
    `torch` folder with an __init__.py and a small libtorch_cpu.so: what the static proofs
    read, and no code of it runs."""
    described = json.loads(host.description.read_text(encoding="utf-8"))
    package = folder / "torch"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported: static')\n")
    library = assemble(
        folder,
        {
            "_ZN3c104mathEv": "vpaddd %ymm1, %ymm2, %ymm3\nvfmadd231ps %ymm1, %ymm2, %ymm3",
            "_ZN2at6native6AVX5126kernelEv": AVX512_KERNEL + "\nvdpbf16ps %zmm1, %zmm2, %zmm3",
        },
    )
    library.rename(package / "lib" / "libtorch_cpu.so")
    paths = described["packages"]["torch"]["paths"]
    described["packages"]["torch"]["paths"] = [
        str(package) if Path(entry).name == "torch" else entry for entry in paths
    ]
    assert str(package) in described["packages"]["torch"]["paths"]
    description = folder / "prebuilt.json"
    description.write_text(json.dumps(described, indent=2), encoding="utf-8")
    return description


def push_of_a_bf16_stack(s: Scenario, host: HostTorch) -> tuple[str, str]:
    """Main's PyTorch becomes the host's, every stack green at that commit (`before`); then
    main's PyTorch (not TorchVision) gains avx512bf16 (`after`): one new stack of one variant,
    which only the gpu-sm90 host's CPU runs."""
    host_torch.make_main_host_torch(s, host, cpu=["avx2"])
    before = s.head()
    planned = s.ci_tools("matrix", "--branch", "main", "--fingerprints").stdout
    for entry in json.loads(planned)["include"]:
        s.github.seed_status(
            before,
            "success",
            statuses.context(entry["name"]),
            statuses.description(entry["fingerprint"]),
        )
    catalog = s.work / "catalog.yaml"
    catalog.write_text(catalog.read_text().replace("cpu: [avx2]\n", f"cpu: [avx2, {ISA}]\n", 1))
    s.ci_tools("generate", "--branch", "main")
    return before, s.commit({}, f"catalog: PyTorch for {ISA} on main")


def builds_by_job(s: Scenario) -> list[tuple[str, str]]:
    return [
        (call.get("job", ""), name)
        for call in s.flox_calls()
        if call["argv"][:1] == ["build"]
        for name in call["argv"][1:]
    ]


def test_built_on_the_pool_checked_on_sm90_from_the_cache_then_published_on_static_proofs(
    tmp_path: Path, host: HostTorch
) -> None:
    if "avx512_bf16" not in hostcpu.read_cpu_flags():
        pytest.skip(
            "the routed checks of an avx512bf16 variant run here: this CPU lacks avx512_bf16"
        )
    secret, public = keypair(tmp_path)
    cache = tmp_path / "binary-cache"
    s = Scenario(tmp_path / "scenario", env={"NIXPKGS_DOUBLE_PREBUILT": str(host.description)})
    small_preflight(s)
    runners = s.work / "runners.yaml"
    runners.write_text(with_cache(runners.read_text(), f"file://{cache}", public))
    s.commit({}, "fleet: the binary cache")
    before, after = push_of_a_bf16_stack(s, host)
    variant, stack = host.variant(ISA), host.stack(ISA)
    sm90_store = tmp_path / "runner-gpu-sm90"

    run = s.act(
        "push",
        push_event(before, after),
        "ci.yml",
        stub=STUB,
        secrets={SECRET: secret},
        env={"ACT_JOB_STORES": json.dumps({"test": str(sm90_store)})},
    )
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    (entry,) = planned["include"]
    assert entry["name"] == stack, run.text()[-3000:]
    # Built on the pool, checked on the sm90 host (the pool's CPUs lack avx512_bf16).
    assert "builder-x86_64" in entry["runs_on"] and "gpu-sm90" in entry["test_runs_on"]
    assert entry["test"] == "cpu"
    assert run.result("build-0") == "success", run.text()[-3000:]
    # The build leg built it, once; the test leg built nothing.
    assert builds_by_job(s) == [("build", variant)]
    (record,) = s.records().values()
    assert record["build"]["cache"]["status"] == "pushed", record["build"]
    path = record["build"]["store_path"]
    # The cache holds it, signed with the fleet's key; the sm90 store got it from there.
    narinfo = (cache / (Path(path).name.split("-", 1)[0] + ".narinfo")).read_text()
    assert f"Sig: {KEY_NAME}:" in narinfo
    built_there = path_info(path, store_env(s))
    tested_there = path_info(path, store_env(s, sm90_store))
    assert built_there is not None and built_there.get("ultimate") is True
    assert tested_there is not None, "the sm90 runner's store does not have the build"
    assert not tested_there.get("ultimate"), tested_there
    assert any(sig.startswith(f"{KEY_NAME}:") for sig in tested_there.get("signatures", []))
    assert f"{path}: substituted from file://{cache}" in run.text()
    assert not (sm90_store / "log" / "drvs").exists()  # where Nix keeps the logs of builds
    # Its checks ran there, on the avx512bf16 CPU; the stack is green; the key was never shown.
    assert record["test"]["status"] == "passed", record["test"]
    assert any(c["status"] == "passed" for c in record["test"]["checks"])
    assert s.github.greens(after, {stack: entry["fingerprint"]}) == {stack: entry["fingerprint"]}
    assert secret.partition(":")[2] not in run.text()
    assert secret.partition(":")[2] not in json.dumps(s.records())

    # The sm90 host leaves the fleet: no runner's CPU runs avx512bf16. A release publishes the
    # variant on its static proofs, tested on the pool from the cache again.
    runners.write_text(without_test_runners(runners.read_text()))
    s.commit({}, "fleet: the sm90 host is gone")
    commit = ready_to_release(s, s.github)
    s.artifacts.rename(tmp_path / "artifacts-push")
    s.flox_log.rename(tmp_path / "flox-calls-push.log")
    pool_store = tmp_path / "runner-pool-tester"
    release = s.act(
        "workflow_dispatch",
        harness.dispatch_event(release_inputs(variant)),
        "release.yml",
        secrets={**FLOXHUB_TOKEN, SECRET: secret},
        env={
            "ACT_JOB_STORES": json.dumps({"test": str(pool_store)}),
            "NIXPKGS_DOUBLE_PREBUILT": str(small_torch(tmp_path / "small-torch", host)),
        },
    )
    planned = json.loads(release.step_output("plan", "matrix", "matrix-0") or "{}")
    (entry,) = planned["include"]
    assert entry["test"] == "static", release.text()[-3000:]
    assert "builder-x86_64" in entry["test_runs_on"]
    assert [job for job, _ in builds_by_job(s)] == ["build"]
    assert f"substituted from file://{cache}" in release.text()
    (record,) = s.records().values()
    checks = {c["name"]: c for c in record["test"]["checks"]}
    assert {c["status"] for c in checks.values()} <= {"static", "skipped"}, checks
    assert "static" in {c["status"] for c in checks.values()}, checks
    published = [c for c in s.flox_calls() if c["argv"][:1] == ["publish"]]
    assert [c["argv"] for c in published] == [["publish", "-o", "acme", variant]]
    assert {c["job"] for c in published} == {"test"}
    assert s.floxhub()["acme"][variant][0]["rev"] == commit
    outcomes = {v["variant"]: v["outcome"] for v in release_asset(s.github, commit)["variants"]}
    assert outcomes[variant] == "published", outcomes
    (made,) = s.github.state.releases
    assert f"static: {ISA} code, nothing above it" in made["body"], made["body"]
    assert release.result("release") == "success", release.text()[-3000:]
