"""`ci-tools build`: transient vs permanent failures, retries, stacks, records — against a fake
`flox` on PATH that records its argv, leaves `result-VARIANT` links and fails on demand."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools.base import narinfo
from ci_tools.base.retry import RetryPolicy
from ci_tools.build import flox_build, results
from ci_tools.build.results import Status
from ci_tools.catalog import variants
from ci_tools.catalog.model import Catalog
from tests import privatestore
from tests.build import fakeflox

CliRunner = Callable[..., subprocess.CompletedProcess[str]]

BASE = "pytorch-python313-cuda12_8-sm90-avx512"
VISION = "torchvision-python313-cuda12_8-sm90-avx512"
OTHER = "pytorch-python313-cpu-avx2"


@pytest.fixture
def fake_flox(tmp_path: Path) -> dict[str, str]:
    return fakeflox.env(tmp_path)


def calls(env: dict[str, str]) -> list[list[str]]:
    log = Path(env["FAKE_FLOX_LOG"])
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    "line",
    [
        "error: unable to download 'https://cache.nixos.org/abc.narinfo': HTTP error 502",
        "warning: error: HTTP error 503 ('Service Unavailable')",
        "curl: (56) Recv failure: Connection reset by peer",
        "curl: (6) Could not resolve host: cache.nixos.org",
        "error: cannot connect to socket at '/nix/var/nix/daemon-socket/socket': Connection refused",
        "error: unexpected end-of-file",
        "warning: some substitutes for the outputs of derivation '/nix/store/x.drv' failed (usually happens due to networking issues)",
    ],
)
def test_transient_failures_are_named(line: str) -> None:
    assert flox_build.transient_reason(f"building...\n{line}\n") is not None


@pytest.mark.parametrize(
    "log",
    [
        "aten/src/ATen/native/Foo.cpp:12:5: error: 'bar' was not declared in this scope",
        "csrc/kernel.cu(44): error\nnvcc fatal   : Unsupported gpu architecture 'compute_130'",
        "ninja: build stopped: subcommand failed.",
        "error: undefined variable 'cudaPackages_13_9'",
        "",
        # Nix recovered from this download itself; the build then failed for another reason.
        "warning: error: unable to download 'https://x': HTTP error 503; retrying in 283 ms\nFAILED tests/test_x.py",
        # A download that was retried and then a compile error: the compile error decides.
        "warning: unable to download 'https://x': HTTP error 503; retrying\nfoo.cpp:1:1: fatal error: x.h: No such file",
    ],
)
def test_build_errors_are_never_transient(log: str) -> None:
    assert flox_build.transient_reason(log) is None


def test_parse_path_info() -> None:
    assert flox_build.parse_path_info("/nix/store/abc-torch-2.8.0\t 3456789012\n") == 3456789012
    assert flox_build.parse_path_info("error: path is not valid\n") is None


@pytest.mark.skipif(
    shutil.which("nix-store") is None or shutil.which("nix") is None, reason="needs nix-bin"
)
def test_closure_size_from_the_real_nix(tmp_path: Path) -> None:
    # A private store under tmp_path (NIX_REMOTE): the real nix, without touching /nix.
    env = {**os.environ, "NIX_REMOTE": f"local?root={tmp_path / 'root'}"}
    payload = tmp_path / "payload.txt"
    payload.write_text("x" * 5000, encoding="utf-8")
    added = subprocess.run(
        ["nix-store", "--add", str(payload)], env=env, capture_output=True, text=True, check=True
    )
    store_path = added.stdout.strip()
    size = flox_build.closure_bytes(store_path, env)
    assert size is not None and 5000 <= size < 6000


@pytest.mark.skipif(
    shutil.which("nix-store") is None or shutil.which("nix") is None, reason="needs nix-bin"
)
def test_the_record_carries_the_outputs_nar_hash_and_size(tmp_path: Path) -> None:
    """Issue 29 item 2: what `nix path-info --json` says of the built path."""
    env = {**os.environ, **privatestore.store_env(tmp_path / "root")}
    store_path = privatestore.add(env, privatestore.payload(tmp_path, "torch", {"a": "x"}))
    [output] = flox_build.outputs_of(store_path, env)
    assert output.store_path == store_path and output.nar_size > 0
    assert output.nar_hash == narinfo.nar_hash_on_disk(store_path, env)
    assert flox_build.outputs_of(str(tmp_path), env) == ()


def test_closure_is_only_asked_of_store_paths(tmp_path: Path) -> None:
    assert flox_build.closure_bytes(str(tmp_path), {"PATH": os.environ.get("PATH", "")}) is None


def _variants(catalog: Catalog, *names: str) -> list[variants.Variant]:
    return [variants.find(catalog, "main", n) for n in names]


def _builder(tmp_path: Path, env: dict[str, str], sleeps: list[float]) -> flox_build.Builder:
    full = {**os.environ, **env}
    policy = RetryPolicy(attempts=3, initial_seconds=5, max_seconds=60, sleep=sleeps.append)
    return flox_build.Builder(
        flox="flox", cwd=tmp_path, env=full, policy=policy, echo=lambda _line: None
    )


def test_transient_failure_is_retried_then_passes(
    catalog: Catalog, tmp_path: Path, fake_flox: dict[str, str]
) -> None:
    sleeps: list[float] = []
    env = {**fake_flox, "FAKE_FLOX_FAIL": f"{OTHER}=transient-once"}
    [(_, outcome)] = flox_build.build_variants(
        _variants(catalog, OTHER), _builder(tmp_path, env, sleeps)
    )
    assert outcome.status is Status.PASSED
    assert outcome.attempts == 2
    assert calls(env) == [["build", OTHER], ["build", OTHER]]
    assert len(sleeps) == 1 and 5 <= sleeps[0] <= 60
    assert outcome.store_path == str((tmp_path / "store" / f"0000-{OTHER}").resolve())
    assert outcome.closure_bytes is None  # not a /nix/store path


def test_retries_are_bounded(catalog: Catalog, tmp_path: Path, fake_flox: dict[str, str]) -> None:
    sleeps: list[float] = []
    env = {**fake_flox, "FAKE_FLOX_FAIL": f"{OTHER}=transient"}
    [(_, outcome)] = flox_build.build_variants(
        _variants(catalog, OTHER), _builder(tmp_path, env, sleeps)
    )
    assert outcome.status is Status.FAILED
    assert outcome.attempts == 3 and len(calls(env)) == 3 and len(sleeps) == 2
    assert "HTTP error 503" in outcome.log_tail


def test_stack_builds_base_first_and_stops_at_its_failure(
    catalog: Catalog, tmp_path: Path, fake_flox: dict[str, str]
) -> None:
    env = {**fake_flox, "FAKE_FLOX_FAIL": f"{BASE}=compile"}
    chosen = _variants(catalog, VISION, OTHER, BASE)
    outcomes = dict(
        (v.name, o) for v, o in flox_build.build_variants(chosen, _builder(tmp_path, env, []))
    )
    assert calls(env) == [["build", BASE], ["build", OTHER]]
    assert outcomes[BASE].status is Status.FAILED and outcomes[BASE].attempts == 1
    assert outcomes[VISION].status is Status.SKIPPED
    assert outcomes[VISION].log_tail == f"not built: {BASE} failed before it in the same stack"
    assert outcomes[OTHER].status is Status.PASSED


def _cli(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "build",
        "--catalog",
        str(repo_root / "catalog.yaml"),
        "--branch",
        "main",
        *args,
        cwd=tmp_path,
        env=env,
    )


def test_cli_builds_a_stack_and_writes_records(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    head = _git_checkout(tmp_path)
    # GITHUB_SHA names the commit a workflow was dispatched for, not the one built (D13).
    env = {**fake_flox, "GITHUB_SHA": "0" * 40, "RUNNER_NAME": "gpu-runner-7"}
    cli = _cli(run_cli, tmp_path, repo_root, env, VISION, BASE, "--results", str(tmp_path / "out"))
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert calls(env) == [["build", BASE], ["build", VISION]]
    assert f"built {BASE}" in cli.stdout  # flox's own output, streamed
    record = results.load(results.result_path(tmp_path / "out", VISION))
    assert record.build is not None and record.build.status is Status.PASSED
    assert (record.commit, record.runner, record.branch, record.platform) == (
        head, "gpu-runner-7", "main", "x86_64-linux",
    )  # fmt: skip
    assert record.build.started_at is not None
    assert record.build.store_path == str((tmp_path / "store" / f"0000-{VISION}").resolve())
    assert record.test is None


def test_cli_without_results_writes_where_publish_reads(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    cli = _cli(run_cli, tmp_path, repo_root, fake_flox, OTHER)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    default = tmp_path / "results"  # publish's --results default, relative to the checkout
    record = results.load(results.result_path(default, OTHER))
    assert record.build is not None and record.build.status is Status.PASSED
    assert f"wrote {Path('results') / f'{OTHER}.result.json'}" in cli.stdout
    publish_help = " ".join(run_cli("publish", "--help").stdout.split())
    assert "(default: results, where `ci-tools build` and `test` write them)" in publish_help


def test_cli_compile_error_is_not_retried(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    env = {**fake_flox, "FAKE_FLOX_FAIL": f"{OTHER}=compile"}
    out = tmp_path / "one.json"
    cli = _cli(run_cli, tmp_path, repo_root, env, OTHER, "--result-json", str(out))
    assert cli.returncode == 1
    assert calls(env) == [["build", OTHER]]
    record = results.load(out)
    assert record.build is not None and record.build.status is Status.FAILED
    assert "was not declared in this scope" in record.build.log_tail
    assert "Traceback" not in cli.stderr


def test_cli_stack_failure_records_the_rest_as_skipped(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    env = {**fake_flox, "FAKE_FLOX_FAIL": f"{BASE}=compile"}
    cli = _cli(run_cli, tmp_path, repo_root, env, BASE, VISION, "--results", str(tmp_path))
    assert cli.returncode == 1
    assert calls(env) == [["build", BASE]]
    vision = results.load(results.result_path(tmp_path, VISION))
    assert vision.build is not None and vision.build.status is Status.SKIPPED


def test_cli_without_flox_is_exit_2(run_cli: CliRunner, tmp_path: Path, repo_root: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cli = _cli(run_cli, tmp_path, repo_root, {"PATH": str(empty)}, OTHER)
    assert cli.returncode == 2
    assert "`flox` was not found on PATH" in cli.stderr


def test_cli_unknown_variant_offers_the_closest(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    cli = _cli(run_cli, tmp_path, repo_root, fake_flox, "pytorch-python313-cuda12_8-sm90-avx521")
    assert cli.returncode == 2
    assert "closest: pytorch-python313-cuda12_8-sm90-avx512" in cli.stderr
    assert calls(fake_flox) == []


def test_cli_result_json_takes_one_variant(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    cli = _cli(
        run_cli,
        tmp_path,
        repo_root,
        fake_flox,
        BASE,
        VISION,
        "--result-json",
        str(tmp_path / "x.json"),
    )
    assert cli.returncode == 2
    assert "--result-json PATH takes one variant" in cli.stderr
    assert calls(fake_flox) == []


def _git_checkout(folder: Path) -> str:
    """Make `folder` a git checkout with one commit; its HEAD."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=folder, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip

    git("init", "-q")
    (folder / "README").write_text("x\n", encoding="utf-8")
    git("add", "README")
    git("commit", "-q", "-m", "x")
    return git("rev-parse", "HEAD")


def test_cli_outside_a_checkout_records_no_commit(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    env = {**fake_flox, "GITHUB_SHA": "0" * 40, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}
    cli = _cli(run_cli, tmp_path, repo_root, env, OTHER, "--result-json", str(tmp_path / "r.json"))
    assert cli.returncode == 0, cli.stderr
    assert results.load(tmp_path / "r.json").commit is None


def test_build_variants_reports_start_then_end_of_each(
    catalog: Catalog, tmp_path: Path, fake_flox: dict[str, str]
) -> None:
    events: list[tuple[str, str, Status]] = []
    builder = _builder(tmp_path, {**fake_flox, "FAKE_FLOX_FAIL": f"{BASE}=compile"}, [])
    flox_build.build_variants(
        _variants(catalog, BASE, VISION, OTHER),
        builder,
        on_start=lambda v, o: events.append(("start", v.name, o.status)),
        on_end=lambda v, o: events.append(("end", v.name, o.status)),
    )
    assert events == [
        ("start", BASE, Status.STARTED),
        ("end", BASE, Status.FAILED),
        ("end", VISION, Status.SKIPPED),  # never started: its base failed
        ("start", OTHER, Status.STARTED),
        ("end", OTHER, Status.PASSED),
    ]


def test_cli_unwritable_results_is_exit_2_before_building(
    run_cli: CliRunner, tmp_path: Path, repo_root: Path, fake_flox: dict[str, str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    cli = _cli(run_cli, tmp_path, repo_root, fake_flox, OTHER, "--results", str(blocker / "out"))
    assert cli.returncode == 2
    assert f"{blocker / 'out' / OTHER}.result.json: cannot write result records" in cli.stderr
    assert "Traceback" not in cli.stderr
    assert calls(fake_flox) == []  # refused before any build
    if os.geteuid() != 0:  # root writes through any mode
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cli = _cli(run_cli, tmp_path, repo_root, fake_flox, OTHER, "--results", str(locked))
        assert cli.returncode == 2 and "cannot write result records" in cli.stderr
        assert calls(fake_flox) == []


@pytest.mark.parametrize("hang", [BASE, VISION])
def test_kill_9_keeps_every_finished_record_and_names_the_running_one(
    tmp_path: Path, repo_root: Path, fake_flox: dict[str, str], hang: str
) -> None:
    """A two-package stack; `ci-tools build` is killed with SIGKILL while `hang` builds."""
    out = tmp_path / "out"
    hanging = tmp_path / "hanging"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        **fake_flox,
        "PYTHONPATH": str(repo_root),
        "FAKE_FLOX_FAIL": f"{hang}=hang",
        "FAKE_FLOX_HANGING": str(hanging),
    }
    argv = [sys.executable, "-m", "ci_tools", "build", "--catalog", str(repo_root / "catalog.yaml")]
    argv += ["--branch", "main", BASE, VISION, "--results", str(out)]
    process = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not hanging.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the fake flox never started the build"
            time.sleep(0.05)
        process.kill()  # SIGKILL to ci-tools itself: no handler, no cleanup
    finally:
        # The orphaned fake flox of this test's own session, killed before the leader is
        # reaped: until then its pid, and so the group's id, cannot be given to another
        # process (a session leader with a reused pid, a Nix builder of another test, would
        # otherwise be the one killed).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        if process.stderr:
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    running = results.load(results.result_path(out, hang))
    assert running.build is not None and running.build.status is Status.STARTED
    assert running.build.started_at is not None
    if hang == VISION:
        finished = results.load(results.result_path(out, BASE))
        assert finished.build is not None and finished.build.status is Status.PASSED
        assert finished.build.store_path == str((tmp_path / "store" / f"0000-{BASE}").resolve())
    else:
        assert not results.result_path(out, VISION).exists()
    # Nothing but records, and the space set aside for them (hidden, so never uploaded; the
    # next build to that path takes it over and gives it back).
    others = [p.name for p in out.iterdir() if not p.name.endswith(".result.json")]
    assert all(n.startswith(".") and n.endswith(".result.json.reserve") for n in others), others
    # The report counts the interrupted build, and the planned one with no record, as failed.
    planned = tmp_path / "planned.txt"
    planned.write_text(f"{BASE}\n{VISION}\n", encoding="utf-8")
    summary = tmp_path / "summary.json"
    cli = subprocess.run(
        [sys.executable, "-m", "ci_tools", "report", str(out), "--planned", str(planned),
         "--json", str(summary)],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 1, cli.stderr  # the killed build failed
    counts = json.loads(summary.read_text(encoding="utf-8"))["counts"]
    assert counts["failed"] == (1 if hang == VISION else 2)
    assert counts["build"]["started"] == 1
    assert counts["build"]["missing"] == (0 if hang == VISION else 1)
