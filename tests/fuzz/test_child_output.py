"""The child-output class: a hostile `flox` and `nvidia-smi` on PATH (tests/fuzz/hostile.py).

Invariants, for every run of `ci-tools build`, `publish` and `detect` under GitHub Actions
(GITHUB_ACTIONS=true, secrets in the environment):
  C1 exit code in {0, 1, 2} and no traceback
  C2 no form of a secret in the environment (hostile.secret_forms) reaches stdout, stderr,
     a result record, a release's notes or its asset
  C3 no line of stdout or stderr is a workflow command carrying the child's payload (the
     runner's reading: hostile.workflow_commands)
  C4 detect: a compute capability that is not X.Y in ASCII digits is refused (exit 2, the
     message names the GPU and --gpu-cc); `N/A` stays "unknown"; a valid one is used
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO_ROOT
from tests.gitutil import git

from . import harness, hostile
from .hostile import COMMANDS, MARKER, SECRETS

CATALOG = REPO_ROOT / "catalog.yaml"
PASSED = "pytorch-python313-cpu-avx2"  # its shipped record passed build and test
BRANCH = "cuda-12_9"
PUBLISHED = "pytorch-python313-cuda12_9-sm90-avx512"  # its shipped record was published
SHORT_BUILDS, LONG_BUILDS = 3, 40
SHORT_DETECTS, LONG_DETECTS = 6, 80


def _env(tools: Path, **extra: str) -> dict[str, str]:
    """What a step of the workflow has: GITHUB_ACTIONS, CI, the secrets, and the hostile tools
    first on PATH."""
    path = os.pathsep.join([str(tools), os.environ.get("PATH", "/usr/bin:/bin")])
    return {"PATH": path, "GITHUB_ACTIONS": "true", "CI": "true", **SECRETS, **extra}


def _ci_tools(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> harness.Run:
    return harness.run_subprocess(argv, cwd, cwd, env)


def _check(done: harness.Run, label: str, *files: Path) -> str:
    """C1-C3 for one run; returns the whole log."""
    log = done.stdout + done.stderr
    assert done.code in (0, 1, 2), f"[{label}] exit {done.code}\n{log[-3000:]}"
    assert done.crash is None, f"[{label}]\n{log[-3000:]}"
    assert not hostile.obeyed(log), f"[{label}] obeyed: {hostile.obeyed(log)}"
    assert not hostile.leaked(log), f"[{label}] leaked to the log: {hostile.leaked(log)}"
    for path in files:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        assert not hostile.leaked(text), f"[{label}] leaked to {path.name}"
    return log


def _lines(rng: random.Random) -> list[str]:
    """What a hostile tool prints: injected commands among noise."""
    noise = [
        "".join(
            rng.choice("ab :#[]%\t\x00\x07\x1b\u202e\u2028é✅") for _ in range(rng.randint(0, 40))
        ),
        "x" * rng.choice((1, 200, 20_000)),
        "building /nix/store/0123-torch.drv",
    ]
    return rng.sample(COMMANDS, rng.randint(1, len(COMMANDS))) + rng.sample(noise, 2)


# --- flox build ------------------------------------------------------------------------------


def test_a_hostile_flox_build_neither_leaks_nor_commands(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed + 20)
    cases = LONG_BUILDS if fuzz_long else SHORT_BUILDS
    for index in range(cases):
        label = f"seed {fuzz_seed + 20} build case {index}"
        work = tmp_path / f"case{index}"
        tools = work / "bin"
        hostile.tool(
            tools,
            "flox",
            lines=_lines(rng),
            code=rng.choice((0, 1, 2, 137)),
            quote_env=list(SECRETS),
        )
        results = work / "results"
        done = _ci_tools(
            [
                "build",
                PASSED,
                "--branch",
                BRANCH,
                "--catalog",
                str(CATALOG),
                "--results",
                str(results),
            ],
            work,
            _env(tools),
        )
        _check(done, label, *results.glob("*.json"))
        assert done.code in (0, 1), f"[{label}] {done.stderr[-2000:]}"
        assert MARKER in done.stdout + done.stderr, "the child's output is shown, escaped"
    with capsys.disabled():
        print(f"\nfuzz child output (flox build): {cases} cases, C1-C3 held")


# --- flox publish, then report and release ---------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_failing_publish_that_quotes_its_token_leaks_it_nowhere(tmp_path: Path) -> None:
    """Issue 20 items 3 and 5: `flox publish` fails quoting FLOX_FLOXHUB_TOKEN and printing
    workflow commands; neither reaches the log, the record, the report or the release."""
    from ci_tools.base import narinfo
    from tests import privatestore
    from tests.doubles.flox.test_flox_double import make_repo
    from tests.doubles.github.server import GitHubDouble

    checkout = make_repo(tmp_path, {})
    head = git(checkout, "rev-parse", "HEAD")
    results = tmp_path / "results"
    results.mkdir()
    record = json.loads((DATA / "results-cuda-12_9" / f"{PASSED}.result.json").read_text())
    record["commit"] = head
    # The tested bytes in this runner's store (a store of the test's own), as the build leg
    # recorded them: publish refuses a record that names none, before flox runs.
    store = privatestore.store_env(tmp_path / "nix")
    built = privatestore.add(store, privatestore.payload(tmp_path, PASSED, {"lib/x": "built"}))
    info = narinfo.one(built, store)
    record["build"]["store_path"] = built
    record["build"]["outputs"] = [
        {"store_path": built, "nar_hash": info.nar_hash, "nar_size": info.nar_size}
    ]
    (results / f"{PASSED}.result.json").write_text(json.dumps(record), encoding="utf-8")
    tools = tmp_path / "bin"
    hostile.tool(tools, "flox", lines=COMMANDS, code=1, quote_env=["FLOX_FLOXHUB_TOKEN"])
    env = _env(tools, **{k: v for k, v in store.items() if k.startswith("NIX_")})
    argv = ["publish", PASSED, "--org", "acme", "--branch", BRANCH, "--catalog", str(CATALOG)]
    done = _ci_tools([*argv, "--results", str(results)], checkout, env)
    saved = results / f"{PASSED}.result.json"
    _check(done, "publish", saved)
    assert done.code == 1, done.stdout + done.stderr
    detail = json.loads(saved.read_text())["publish"]["detail"]
    assert "***" in detail and "authentication failed" in detail  # redacted, not dropped

    report = _ci_tools(
        ["report", str(results), "--markdown", str(tmp_path / "summary.md")], tmp_path, env
    )
    _check(report, "report", tmp_path / "summary.md")

    # Another variant of the commit was published: the release is made, naming both.
    shipped = json.loads((DATA / "results-cuda-12_9" / f"{PUBLISHED}.result.json").read_text())
    shipped["commit"] = head
    (results / f"{PUBLISHED}.result.json").write_text(json.dumps(shipped), encoding="utf-8")
    with GitHubDouble() as github:
        release_env = {
            **env,
            "GITHUB_API_URL": github.url,
            "GITHUB_REPOSITORY": github.repository,
            "GITHUB_SHA": head,
        }
        argv = ["release", "--branch", BRANCH, "--catalog", str(CATALOG), "--results", str(results)]
        released = _ci_tools(argv, REPO_ROOT, release_env)
        log = _check(released, "release")
        assert released.code == 1, log  # the publish failed
        tag = f"{BRANCH}-{head[:12]}"
        made = github.release(tag)
        assert made is not None, log
        assert not hostile.leaked(made["body"]) and "***" in made["body"]
        assert PUBLISHED in made["body"]
        asset = github.asset_bytes(tag, f"results-{tag}.json") or b""
        assert asset and not hostile.leaked(asset.decode())


# --- nvidia-smi ------------------------------------------------------------------------------

VALID = ("9.0", "12.1", "8.6", "7.5")
UNKNOWN = ("[N/A]", "N/A", "[Not Supported]", "x")  # no digits: nvidia-smi does not know
INVALID = (
    "\u0669.\u0660",
    "1" * 5000 + ".0",
    "9.0.1",
    "\uff19.\uff10",
    "-9.0",
    "9 . 0",
    "9.0\u00b2",
)
# What nvidia-smi prints in the driver column: a version, or [N/A] where it has none.
DRIVERS = ("580.65.06", "570.124.06", "[N/A]", "[Not Supported]")


NAMES = [command for command in COMMANDS if "\r" not in command]


def _detect(tmp_path: Path, lines: list[str], label: str) -> harness.Run:
    tools = tmp_path / "bin"
    hostile.tool(tools, "nvidia-smi", lines=lines, code=0, stderr_too=False)
    argv = [
        "detect",
        "--catalog",
        str(CATALOG),
        "--branch",
        "main",
        "--machine",
        "x86_64",
        "--cpu-flags",
        "avx2,fma,f16c",
    ]
    done = _ci_tools(argv, tmp_path, _env(tools))
    _check(done, label)
    return done


@pytest.mark.parametrize("capability", INVALID, ids=lambda cap: ascii(cap)[:20])
def test_detect_refuses_a_capability_that_is_not_ascii_x_y(tmp_path: Path, capability: str) -> None:
    """Issue 20 item 10: 5000 digits crashed detect; Arabic-Indic digits were taken as 9.0."""
    done = _detect(tmp_path, [f"NVIDIA H100 80GB HBM3, {capability}, 580.65.06"], "detect")
    assert done.code == 2, done.stdout + done.stderr
    assert "nvidia-smi" in done.stderr and "NVIDIA H100 80GB HBM3" in done.stderr
    assert "--gpu-cc" in done.stderr
    assert len(done.stderr) < 2000  # the 5000 digits are not echoed back whole


def test_detect_prints_a_hostile_gpu_name_as_text(tmp_path: Path) -> None:
    """Issue 20 item 5: a GPU name holding `##[warning]` was printed as a command."""
    # As nvidia-smi answers detect's query: name, compute capability, driver.
    lines = [f"NVIDIA {name}, 9.0, 580.65.06" for name in NAMES]
    done = _detect(tmp_path, lines, "detect names")
    assert done.code == 0, done.stderr
    assert MARKER in done.stdout


def test_a_hostile_nvidia_smi_never_crashes_detect(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed + 21)
    cases = LONG_DETECTS if fuzz_long else SHORT_DETECTS
    codes: dict[int, int] = {}
    for index in range(cases):
        gpus = [
            (
                rng.choice([*NAMES, "NVIDIA H100", "", "a,b,c"]),
                rng.choice((*VALID, *UNKNOWN, *INVALID)),
                rng.choice(DRIVERS),
            )
            for _ in range(rng.randint(1, 4))
        ]
        # As nvidia-smi answers detect's query: name, compute capability, driver.
        lines = [f"{name}, {cap}, {driver}" for name, cap, driver in gpus]
        done = _detect(
            tmp_path / f"case{index}", lines, f"seed {fuzz_seed + 21} detect case {index}"
        )
        refused = any(cap in INVALID for _, cap, _ in gpus)
        assert (done.code == 2) == refused, (lines, done.stderr[-2000:])
        codes[done.code] = codes.get(done.code, 0) + 1
    with capsys.disabled():
        print(f"\nfuzz child output (nvidia-smi): {cases} cases, exit codes {codes}, C1-C4 held")
