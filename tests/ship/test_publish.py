"""`ci-tools publish` against the flox double (tests/doubles/flox) in real git checkouts with a
real bare remote: what flox refuses is refused first, only records of HEAD authorise a
publish, and "already published" is FloxHub's answer through flox, per organisation."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ci_tools.base import narinfo
from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.retry import RetryPolicy
from ci_tools.build import results
from ci_tools.build.results import Output, PublishStatus
from ci_tools.ship import publish
from tests import proven
from tests.conftest import DATA, REPO_ROOT
from tests.doubles.flox.test_flox_double import (
    double_environment,
    make_repo,
    recipe,
    store_environment,
)

RESULTS = DATA / "results-cuda-12_9"
PASSED = "pytorch-python313-cpu-avx2"
PUBLISHED = "pytorch-python313-cuda12_9-sm90-avx512"  # its record says "published to acme"
TEST_FAILED = "pytorch-python313-cuda12_9-sm89-avx2"
BUILD_FAILED = "torchvision-python313-cuda12_9-sm89-avx2"
VARIANTS = (PASSED, PUBLISHED, TEST_FAILED, BUILD_FAILED)
EXPECTED = {name: proven.repo_expect("cuda-12_9", name) for name in VARIANTS}

CliRunner = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None or shutil.which("git") is None,
    reason="needs nix-bin and git",
)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def flox_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The flox double first on PATH for this process (publish.run calls flox directly)."""
    env = double_environment(tmp_path)
    for key in ("PATH", *(k for k in env if k.startswith("FLOX_DOUBLE_"))):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("FLOX_FLOXHUB_TOKEN", raising=False)
    return env


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A pushed checkout with a locked flox environment holding a recipe per variant."""
    return make_repo(tmp_path, {f".flox/pkgs/{name}.nix": recipe(name) for name in VARIANTS})


def _head(checkout: Path) -> str:
    return _git(checkout, "rev-parse", "HEAD").strip()


def _records(tmp_path: Path, commit: str | None) -> Path:
    """The shipped records, rewritten to name `commit` (None: no commit at all)."""
    target = tmp_path / "results"
    target.mkdir()
    for source in RESULTS.iterdir():
        data = json.loads(source.read_text(encoding="utf-8"))
        data["commit"] = commit
        (target / source.name).write_text(json.dumps(data), encoding="utf-8")
    return target


@pytest.fixture
def results_dir(tmp_path: Path, checkout: Path) -> Path:
    return _records(tmp_path, _head(checkout))


def _calls(env: dict[str, str], command: str = "publish") -> list[list[str]]:
    log = Path(env["FLOX_DOUBLE_LOG"])
    if not log.exists():
        return []
    argvs = [json.loads(line)["argv"] for line in log.read_text().splitlines()]
    return [argv for argv in argvs if argv[0] == command]


def _floxhub(env: dict[str, str]) -> dict[str, dict[str, list[dict[str, str]]]]:
    state = Path(env["FLOX_DOUBLE_STATE"]) / "floxhub.json"
    return json.loads(state.read_text()) if state.exists() else {}


def _publish(
    names: list[str],
    results_dir: Path,
    cwd: Path,
    *,
    org: str = "acme",
    sleeps: list[float] | None = None,
    attempts: int = 4,
    dry_run: bool = False,
) -> list[str]:
    said: list[str] = []
    publish.run(
        names,
        org=org,
        results_dir=results_dir,
        cwd=cwd,
        dry_run=dry_run,
        expected=EXPECTED,
        policy=RetryPolicy(attempts=attempts, sleep=(sleeps if sleeps is not None else []).append),
        say=said.append,
    )
    return said


# --- retries and outcomes -------------------------------------------------------------------


def test_transient_failure_then_success(
    flox_env: dict[str, str],
    checkout: Path,
    results_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    bound: Path,
) -> None:
    monkeypatch.setenv("FLOX_DOUBLE_FAIL", f"{PASSED}=transient:1")
    sleeps: list[float] = []
    _publish([PASSED], results_dir, checkout, sleeps=sleeps)
    assert _calls(flox_env) == [["publish", "-o", "acme", PASSED]] * 2
    assert len(sleeps) == 1
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None
    assert record.publish.status is PublishStatus.PUBLISHED and record.publish.attempts == 2
    assert [b["rev"] for b in _floxhub(flox_env)["acme"][PASSED]] == [_head(checkout)]


def test_permanent_failure_is_not_retried(
    flox_env: dict[str, str],
    checkout: Path,
    results_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    bound: Path,
) -> None:
    monkeypatch.setenv("FLOX_DOUBLE_FAIL", f"{PASSED}=build")
    sleeps: list[float] = []
    with pytest.raises(FailedError, match=f"{PASSED} \\(publish failed\\)"):
        _publish([PASSED], results_dir, checkout, sleeps=sleeps)
    assert len(_calls(flox_env)) == 1 and sleeps == []
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None and record.publish.status is PublishStatus.FAILED
    assert record.publish.detail.startswith("permanent after 1 attempt(s)")
    assert _floxhub(flox_env) == {}


def test_transient_failures_give_up_after_the_attempts(
    flox_env: dict[str, str],
    checkout: Path,
    results_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    bound: Path,
) -> None:
    monkeypatch.setenv("FLOX_DOUBLE_FAIL", f"{PASSED}=transient")
    with pytest.raises(FailedError):
        _publish([PASSED], results_dir, checkout, attempts=3)
    assert len(_calls(flox_env)) == 3
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None and "transient, gave up after 3" in record.publish.detail
    # flox's debug records (ci-tools asks for them) stay out of what is stored or shown.
    assert "503 Service Unavailable" in record.publish.detail
    assert "DEBUG" not in record.publish.detail and "url_with_query" not in record.publish.detail


# --- what authorises a publish --------------------------------------------------------------


def test_failed_variants_are_never_published(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, bound: Path
) -> None:
    with pytest.raises(FailedError) as caught:
        _publish([TEST_FAILED, PASSED, BUILD_FAILED], results_dir, checkout)
    assert _calls(flox_env) == [["publish", "-o", "acme", PASSED]]
    assert f"{TEST_FAILED} (test failed: arch-list)" in str(caught.value)
    assert f"{BUILD_FAILED} (build failed)" in str(caught.value)
    assert results.load(results.result_path(results_dir, TEST_FAILED)).publish is None


def test_missing_record_is_refused(
    flox_env: dict[str, str], checkout: Path, tmp_path: Path
) -> None:
    with pytest.raises(FailedError, match="no result record"):
        _publish([PASSED], tmp_path / "empty", checkout)
    assert _calls(flox_env) == []


def test_a_record_of_another_commit_never_authorises_head(
    flox_env: dict[str, str], checkout: Path, tmp_path: Path
) -> None:
    old = _head(checkout)
    records = _records(tmp_path, old)
    _git(checkout, "commit", "-q", "--allow-empty", "-m", "a newer commit")
    _git(checkout, "push", "-q")
    with pytest.raises(FailedError, match=f"{PASSED} \\(built and tested at another commit\\)"):
        _publish([PASSED], records, checkout)
    assert _calls(flox_env) == []
    assert _floxhub(flox_env) == {}


def test_the_refusal_names_both_commits(
    flox_env: dict[str, str], checkout: Path, tmp_path: Path
) -> None:
    records = _records(tmp_path, "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b")
    said: list[str] = []
    with pytest.raises(FailedError):
        publish.run(
            [PASSED],
            org="acme",
            results_dir=records,
            cwd=checkout,
            dry_run=False,
            expected=EXPECTED,
            policy=RetryPolicy(attempts=1),
            say=said.append,
        )
    assert said == [
        f"{PASSED}: refused: built and tested at another commit (1a2b3c4d5e6f; HEAD is "
        f"{_head(checkout)[:12]}: build and test at HEAD first)"
    ]


def test_a_record_without_commit_is_refused(
    flox_env: dict[str, str], checkout: Path, tmp_path: Path
) -> None:
    with pytest.raises(FailedError, match="the record names no commit"):
        _publish([PASSED], _records(tmp_path, None), checkout)
    assert _calls(flox_env) == []


# --- "already published" is FloxHub's answer, per organisation ------------------------------


def test_rerun_is_answered_by_floxhub_through_flox(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, bound: Path
) -> None:
    said = _publish([PASSED], results_dir, checkout)
    assert f"{PASSED}: published to acme (attempts: 1)" in said
    again = _publish([PASSED], results_dir, checkout)
    head = _head(checkout)
    assert f"{PASSED}: already published to acme from {head} (FloxHub's answer through flox " \
        "publish); skipped" in again  # fmt: skip
    assert len(_floxhub(flox_env)["acme"][PASSED]) == 1  # nothing published twice
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None and record.publish.status is PublishStatus.PUBLISHED


def test_another_org_is_never_already_published(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, bound: Path
) -> None:
    _publish([PASSED], results_dir, checkout, org="acme")
    said = _publish([PASSED], results_dir, checkout, org="other")
    assert not any("already published" in line for line in said)
    assert f"{PASSED}: published to other (attempts: 1)" in said
    assert set(_floxhub(flox_env)) == {"acme", "other"}


def test_a_local_record_saying_published_is_not_trusted(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _built_by_flox(flox_env, checkout, monkeypatch, PUBLISHED)
    _tested(results_dir, built, narinfo.one(built, dict(os.environ)).nar_hash, PUBLISHED)
    # The shipped record of PUBLISHED says "published to acme"; FloxHub has nothing.
    said = _publish([PUBLISHED], results_dir, checkout)
    assert _calls(flox_env) == [["publish", "-o", "acme", PUBLISHED]]
    assert f"{PUBLISHED}: published to acme (attempts: 1)" in said
    assert PUBLISHED in _floxhub(flox_env)["acme"]


def test_dry_run_asks_floxhub_with_flox_show(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, bound: Path
) -> None:
    _publish([PASSED], results_dir, checkout, org="acme")
    before = {p.name: p.read_bytes() for p in results_dir.iterdir()}
    acme = _publish([PASSED, PUBLISHED], results_dir, checkout, dry_run=True)
    assert acme == [
        f"would run: flox publish -o acme {PASSED} (FloxHub has acme/{PASSED} 2.9.1; flox "
        "publish skips it if this commit's build is already there)",
        f"would run: flox publish -o acme {PUBLISHED} (FloxHub has no acme/{PUBLISHED})",
    ]
    other = _publish([PASSED], results_dir, checkout, org="other", dry_run=True)
    assert other == [f"would run: flox publish -o other {PASSED} (FloxHub has no other/{PASSED})"]
    assert ["show", f"other/{PASSED}"] in _calls(flox_env, "show")
    assert len(_calls(flox_env)) == 1  # the dry runs published nothing
    assert {p.name: p.read_bytes() for p in results_dir.iterdir()} == before


# --- what flox refuses, refused first -------------------------------------------------------


def test_missing_lock_names_the_command_that_makes_it(
    flox_env: dict[str, str], checkout: Path, tmp_path: Path
) -> None:
    _git(checkout, "rm", "-q", ".flox/env/manifest.lock")
    _git(checkout, "commit", "-q", "-m", "unlocked")
    _git(checkout, "push", "-q")
    with pytest.raises(InputError) as caught:
        _publish([PASSED], _records(tmp_path, _head(checkout)), checkout)
    message = str(caught.value)
    assert ".flox/env/manifest.lock is missing" in message
    assert "Run `flox list`" in message and "commit and push" in message
    assert _calls(flox_env) == []


def test_dry_run_warns_of_the_missing_lock(
    flox_env: dict[str, str], checkout: Path, results_dir: Path
) -> None:
    (checkout / ".flox" / "env" / "manifest.lock").unlink()
    said = _publish([PASSED], results_dir, checkout, dry_run=True)
    assert said[0].startswith("warning: a real run would stop here:")
    assert "Run `flox list`" in said[0]


def test_missing_env_json_is_refused(
    flox_env: dict[str, str], checkout: Path, results_dir: Path
) -> None:
    (checkout / ".flox" / "env.json").unlink()
    with pytest.raises(InputError, match=r"\.flox/env\.json is missing"):
        _publish([PASSED], results_dir, checkout)
    assert _calls(flox_env) == []


def test_missing_token_in_ci_is_refused_without_showing_anything_secret(
    flox_env: dict[str, str],
    checkout: Path,
    results_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    bound: Path,
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(InputError, match="FLOX_FLOXHUB_TOKEN is not set"):
        _publish([PASSED], results_dir, checkout)
    assert _calls(flox_env) == []
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", "flox-secret-token")
    said = _publish([PASSED], results_dir, checkout)
    assert not any("flox-secret-token" in line for line in said)
    assert PASSED in _floxhub(flox_env)["acme"]


def test_dirty_checkout_is_refused(
    flox_env: dict[str, str], checkout: Path, results_dir: Path
) -> None:
    (checkout / ".flox" / "pkgs" / f"{PASSED}.nix").write_text("edited\n")
    with pytest.raises(InputError, match=r"not clean.*\n\s+M \.flox/pkgs/"):
        _publish([PASSED], results_dir, checkout)
    assert _calls(flox_env) == []


def test_unpushed_commit_is_refused(
    flox_env: dict[str, str], checkout: Path, tmp_path: Path
) -> None:
    _git(checkout, "commit", "-q", "--allow-empty", "-m", "local only")
    records = _records(tmp_path, _head(checkout))
    with pytest.raises(InputError, match=r"not on any remote branch.*git push"):
        _publish([PASSED], records, checkout)
    assert _calls(flox_env) == []


def test_detached_head_is_refused(
    flox_env: dict[str, str], checkout: Path, results_dir: Path
) -> None:
    _git(checkout, "checkout", "-q", "--detach", "HEAD")
    with pytest.raises(InputError, match="not a branch with an upstream"):
        _publish([PASSED], results_dir, checkout)
    assert _calls(flox_env) == []


def test_not_a_git_checkout_is_refused(
    flox_env: dict[str, str], tmp_path: Path, results_dir: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="not a git checkout"):
        _publish([PASSED], results_dir, plain)


# --- the organisation -----------------------------------------------------------------------------


@pytest.mark.parametrize("org", ["acme", "a", "flox-community", "A1-b2", "x" * 39])
def test_valid_orgs(org: str) -> None:
    assert publish.validate_org(org) == org


@pytest.mark.parametrize(
    "org",
    ["", "-acme", "acme-", "a--b", "a_b", "a.b", "x" * 40, "a/b", "a b; rm -rf ~", "$(id)", "a\nb"],
)
def test_invalid_orgs(org: str) -> None:
    with pytest.raises(InputError, match="not a valid organisation name") as caught:
        publish.validate_org(org)
    assert "\n" not in str(caught.value)


# --- the command line -----------------------------------------------------------------------


def _cli(
    run_cli: CliRunner, cwd: Path, env: dict[str, str] | None, *args: str
) -> subprocess.CompletedProcess[str]:
    catalog = str(REPO_ROOT / "catalog.yaml")
    return run_cli("publish", *args, "--catalog", catalog, cwd=cwd, env=env)


def test_cli_publishes_through_flox(
    run_cli: CliRunner, flox_env: dict[str, str], checkout: Path, results_dir: Path, bound: Path
) -> None:
    args = (PASSED, "--org", "acme", "--results", str(results_dir), "--branch", "cuda-12_9")
    done = _cli(run_cli, checkout, flox_env, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Package published successfully." in done.stdout  # flox's output, streamed
    again = _cli(run_cli, checkout, flox_env, *args)
    assert again.returncode == 0 and "already published to acme" in again.stdout


def test_cli_dry_run_without_flox_writes_nothing(
    run_cli: CliRunner, checkout: Path, results_dir: Path, tmp_path: Path
) -> None:
    before = {p.name: p.read_bytes() for p in results_dir.iterdir()}
    empty = tmp_path / "nothing-on-path"
    empty.mkdir()
    git_dir = str(Path(shutil.which("git") or "/usr/bin/git").parent)
    env = {"PATH": os.pathsep.join([str(empty), git_dir])}
    args = (PASSED, "--org", "acme", "--results", str(results_dir), "--branch", "cuda-12_9")
    done = _cli(run_cli, checkout, env, *args, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"would run: flox publish -o acme {PASSED} (flox is not on PATH" in done.stdout
    assert {p.name: p.read_bytes() for p in results_dir.iterdir()} == before


def test_cli_refuses_failed_variants_exit_1(
    run_cli: CliRunner, checkout: Path, results_dir: Path
) -> None:
    args = (TEST_FAILED, "--org", "acme", "--results", str(results_dir), "--branch", "cuda-12_9")
    done = _cli(run_cli, checkout, None, *args, "--dry-run")
    assert done.returncode == 1
    assert f"{TEST_FAILED} (test failed: arch-list)" in done.stderr


def test_cli_never_publishes_a_record_of_checks_ci_tools_test_does_not_make(
    run_cli: CliRunner, flox_env: dict[str, str], checkout: Path, results_dir: Path
) -> None:
    """Issue 29: a cpu-avx2 record whose only check was {"name": "x", "status": "passed"}
    made `ci-tools publish` run `flox publish`."""
    path = results_dir / f"{PASSED}.result.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["test"]["checks"] = [{"name": "x", "status": "passed", "detail": ""}]
    path.write_text(json.dumps(data), encoding="utf-8")
    args = (PASSED, "--org", "acme", "--results", str(results_dir), "--branch", "cuda-12_9")
    done = _cli(run_cli, checkout, flox_env, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not a check `ci-tools test` makes for it: x" in done.stdout + done.stderr
    assert _calls(flox_env) == []


@pytest.mark.parametrize("org", ["acme-", "a b; rm -rf ~", "$(id)", "x\n::warning::y"])
def test_cli_invalid_org_exit_2(
    run_cli: CliRunner, checkout: Path, results_dir: Path, org: str
) -> None:
    done = _cli(run_cli, checkout, None, PASSED, f"--org={org}", "--results", str(results_dir))
    assert done.returncode == 2
    assert f"--org {org!a} is not a valid organisation name" in done.stderr
    assert "letters, digits and single hyphens" in done.stderr
    assert "::warning::" not in done.stderr.replace(f"{org!a}", "")
    assert "Traceback" not in done.stderr


def test_cli_unknown_variant_exit_2(run_cli: CliRunner, checkout: Path, results_dir: Path) -> None:
    args = ("pytorch-python313-cpu-avx3", "--org", "acme", "--branch", "cuda-12_9")
    done = _cli(run_cli, checkout, None, *args, "--results", str(results_dir))
    assert done.returncode == 2
    assert "closest: pytorch-python313-cpu-avx" in done.stderr


def test_cli_unknown_branch_exit_2(run_cli: CliRunner, checkout: Path) -> None:
    done = _cli(run_cli, checkout, None, PASSED, "--org", "acme", "--branch", "cuda-99")
    assert done.returncode == 2
    assert 'unknown branch "cuda-99"' in done.stderr


def test_cli_record_of_another_branch_exit_2(
    run_cli: CliRunner, checkout: Path, results_dir: Path
) -> None:
    args = (PASSED, "--org", "acme", "--branch", "main", "--results", str(results_dir))
    done = _cli(run_cli, checkout, None, *args)
    assert done.returncode == 2
    assert "a record of branch cuda-12_9, not main" in done.stderr


# --- the tested bytes, or no publish (issue 29 item 2) ---------------------------------------


def _built_by_flox(
    flox_env: dict[str, str], checkout: Path, monkeypatch: pytest.MonkeyPatch, name: str = PASSED
) -> str:
    """PASSED built by `flox build` in the checkout, in the double's store, which this process's
    Nix then sees as a runner's sees /nix/store."""
    store = store_environment(flox_env)
    for key in ("NIX_STORE_DIR", "NIX_STATE_DIR", "NIX_LOG_DIR", "NIX_CONF_DIR", "NIX_REMOTE"):
        monkeypatch.setenv(key, store[key])
    subprocess.run(
        ["flox", "build", name], cwd=checkout, env=store, check=True, capture_output=True
    )
    link = checkout / f"result-{name}"
    built = str(link.readlink())
    link.unlink()  # an untracked link would make the checkout dirty to flox publish
    return built


@pytest.fixture
def bound(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """`results_dir` with PASSED's record naming what `flox build` made of it here, by store
    path and NAR hash, as its build leg records it: publish refuses a record that names no
    tested bytes."""
    built = _built_by_flox(flox_env, checkout, monkeypatch)
    _tested(results_dir, built, narinfo.one(built, dict(os.environ)).nar_hash)
    return results_dir


def _tested(results_dir: Path, store_path: str, nar_hash: str, name: str = PASSED) -> None:
    path = results.result_path(results_dir, name)
    record = results.load(path)
    assert record.build is not None
    output = Output(store_path=store_path, nar_hash=nar_hash, nar_size=1)
    build = replace(record.build, store_path=store_path, outputs=(output,))
    results.save(record.with_build(build), path)


def _publish_detail(results_dir: Path) -> tuple[PublishStatus, str]:
    record = results.load(results.result_path(results_dir, PASSED))
    assert record.publish is not None
    return record.publish.status, record.publish.detail


def test_publish_is_refused_when_this_store_holds_other_bytes_than_the_tested(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _built_by_flox(flox_env, checkout, monkeypatch)
    here = narinfo.one(built, dict(os.environ)).nar_hash
    recorded = "sha256-" + "A" * 43 + "="
    _tested(results_dir, built, recorded)
    with pytest.raises(FailedError, match=rf"{PASSED} \(publish failed\)"):
        _publish([PASSED], results_dir, checkout, org="acme")
    status, detail = _publish_detail(results_dir)
    assert status is PublishStatus.FAILED
    assert f"has NAR hash {here} here, its build recorded {recorded}" in detail
    assert _calls(flox_env) == []  # refused before flox publish ran


def test_publish_is_refused_when_the_tested_path_is_not_here(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _built_by_flox(flox_env, checkout, monkeypatch)
    tested = built.replace(Path(built).name[:32], "0" * 32)
    _tested(results_dir, tested, narinfo.one(built, dict(os.environ)).nar_hash)
    with pytest.raises(FailedError):
        _publish([PASSED], results_dir, checkout, org="acme")
    status, detail = _publish_detail(results_dir)
    assert status is PublishStatus.FAILED and f"the tested {tested} is not in this" in detail
    assert _calls(flox_env) == []


def _in_ci(monkeypatch: pytest.MonkeyPatch) -> str:
    """A CI job: CI set, the FloxHub token in the environment, flox's stderr a pipe (no
    FLOX_DOUBLE_TERMINAL: flox draws no progress span)."""
    token = "flox-token-that-must-never-show"
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", token)
    monkeypatch.delenv("FLOX_DOUBLE_TERMINAL", raising=False)
    return token


def test_a_clean_clone_building_another_derivation_is_refused_in_ci(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build leg built and tested one derivation; the pushed commit the clean clone builds
    makes another. The tested path is here with its bytes, so nothing stops flox before it
    runs: only what it says it uploads shows the difference, on a pipe too."""
    token = _in_ci(monkeypatch)
    tested = _built_by_flox(flox_env, checkout, monkeypatch)
    recipe_file = checkout / ".flox" / "pkgs" / f"{PASSED}.nix"
    recipe_file.write_text(recipe_file.read_text().replace("echo ", "echo changed "))
    _git(checkout, "commit", "-qam", "the recipe changes after the build leg")
    _git(checkout, "push", "-q")
    (checkout.parent / "at-head").mkdir()
    records = _records(checkout.parent / "at-head", _head(checkout))
    _tested(records, tested, narinfo.one(tested, dict(os.environ)).nar_hash)
    with pytest.raises(FailedError, match=rf"{PASSED} \(publish failed\)"):
        _publish([PASSED], records, checkout, org="acme")
    status, detail = _publish_detail(records)
    assert status is PublishStatus.FAILED
    assert f"not the tested {tested}: the clean clone's derivation differs" in detail
    uploaded = detail.split("flox publish uploaded ")[1].split(",")[0]
    assert uploaded != tested and uploaded.endswith(f"-{PASSED}-2.9.1")
    assert len(_calls(flox_env)) == 1 and token not in detail


def test_forced_colours_still_name_the_upload(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FORCE_COLOR makes flox colour its log records on a pipe: they are read all the same."""
    _in_ci(monkeypatch)
    monkeypatch.setenv("FORCE_COLOR", "1")
    built = _built_by_flox(flox_env, checkout, monkeypatch)
    store = store_environment(flox_env)
    other = checkout.parent / "other"
    other.mkdir()
    (other / "file").write_text("another build", encoding="utf-8")
    tested = subprocess.run(
        ["nix-store", "--add", str(other)], env=store, capture_output=True, text=True, check=True
    ).stdout.strip()
    _tested(results_dir, tested, narinfo.one(tested, store).nar_hash)
    with pytest.raises(FailedError):
        _publish([PASSED], results_dir, checkout, org="acme")
    status, detail = _publish_detail(results_dir)
    assert status is PublishStatus.FAILED and f"uploaded {built}, not the tested {tested}" in detail


def test_publish_of_the_tested_bytes_is_published(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = _in_ci(monkeypatch)
    built = _built_by_flox(flox_env, checkout, monkeypatch)
    _tested(results_dir, built, narinfo.one(built, dict(os.environ)).nar_hash)
    said = _publish([PASSED], results_dir, checkout, org="acme")
    # flox names the upload in a debug record (RUST_LOG): of it only the path is shown, never
    # the URL or the `nix copy` command line its other fields carry.
    assert f"  Uploading '{built}'" in said
    text = "\n".join(said)
    assert "DEBUG" not in text and "url_with_query" not in text and "nix copy" not in text
    assert "Package published successfully." in text and token not in text
    assert _publish_detail(results_dir)[0] is PublishStatus.PUBLISHED


def test_publish_of_the_tested_bytes_on_a_terminal_is_published(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOX_DOUBLE_TERMINAL", "1")
    built = _built_by_flox(flox_env, checkout, monkeypatch)
    _tested(results_dir, built, narinfo.one(built, dict(os.environ)).nar_hash)
    said = _publish([PASSED], results_dir, checkout, org="acme")
    assert f"  Uploading '{built}'" in said
    assert _publish_detail(results_dir)[0] is PublishStatus.PUBLISHED


def test_a_rust_log_of_the_runner_cannot_hide_the_upload(
    flox_env: dict[str, str], checkout: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runner's RUST_LOG=off would hide the event and the messages: ci-tools sets its own."""
    _in_ci(monkeypatch)
    monkeypatch.setenv("RUST_LOG", "off")
    built = _built_by_flox(flox_env, checkout, monkeypatch)
    _tested(results_dir, built, narinfo.one(built, dict(os.environ)).nar_hash)
    said = _publish([PASSED], results_dir, checkout, org="acme")
    assert f"  Uploading '{built}'" in said
    assert _publish_detail(results_dir)[0] is PublishStatus.PUBLISHED
