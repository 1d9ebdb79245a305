"""`ci-tools build` orchestrated through the flox double (tests/doubles/flox): real recipes in
a real git checkout, instantiated with the real nix-instantiate and realised in a private
store; failures are Nix's own (a broken recipe) or injected (FLOX_DOUBLE_FAIL)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools.base.retry import RetryPolicy
from ci_tools.build import flox_build, results
from ci_tools.build.results import Status
from ci_tools.catalog import variants
from ci_tools.catalog.load import load_catalog
from tests.conftest import REPO_ROOT
from tests.doubles.flox.test_flox_double import (
    double_environment,
    make_repo,
    recipe,
    store_environment,
)

BASE = "pytorch-python313-cuda12_8-sm90-avx512"
VISION = "torchvision-python313-cuda12_8-sm90-avx512"
OTHER = "pytorch-python313-cpu-avx2"

CliRunner = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None or shutil.which("git") is None,
    reason="needs nix-bin and git",
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return double_environment(tmp_path)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return make_repo(tmp_path, {f".flox/pkgs/{n}.nix": recipe(n) for n in (BASE, VISION, OTHER)})


def _calls(env: dict[str, str]) -> list[list[str]]:
    log = Path(env["FLOX_DOUBLE_LOG"])
    if not log.exists():
        return []
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def _builder(cwd: Path, env: dict[str, str], sleeps: list[float]) -> flox_build.Builder:
    policy = RetryPolicy(attempts=3, initial_seconds=5, max_seconds=60, sleep=sleeps.append)
    return flox_build.Builder(flox="flox", cwd=cwd, env=env, policy=policy, echo=lambda _line: None)


def _chosen(*names: str) -> list[variants.Variant]:
    catalog = load_catalog(REPO_ROOT / "catalog.yaml", display_name="catalog.yaml")
    return [variants.find(catalog, "main", name) for name in names]


def _cli(
    run_cli: CliRunner, cwd: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    catalog = str(REPO_ROOT / "catalog.yaml")
    return run_cli("build", "--catalog", catalog, "--branch", "main", *args, cwd=cwd, env=env)


def test_cli_builds_a_stack_for_real_and_records_it(
    run_cli: CliRunner, checkout: Path, env: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "records"
    done = _cli(run_cli, checkout, env, VISION, BASE, "--results", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _calls(env) == [["build", BASE], ["build", VISION]]
    for name in (BASE, VISION):
        record = results.load(results.result_path(out, name))
        assert record.build is not None and record.build.status is Status.PASSED
        store_path = Path(record.build.store_path or "")
        assert store_path.parent == tmp_path / "nix" / "store"  # the double's private store
        assert store_path.name.endswith(f"-{name}-2.9.1")
        assert (checkout / f"result-{name}").resolve() == store_path


def test_transient_failure_is_retried_then_passes(
    checkout: Path, env: dict[str, str], tmp_path: Path
) -> None:
    sleeps: list[float] = []
    run_env = {**env, "FLOX_DOUBLE_FAIL": f"{OTHER}=transient:1"}
    [(_, outcome)] = flox_build.build_variants(_chosen(OTHER), _builder(checkout, run_env, sleeps))
    assert outcome.status is Status.PASSED and outcome.attempts == 2
    assert _calls(env) == [["build", OTHER]] * 2
    assert len(sleeps) == 1


@pytest.mark.parametrize(
    ("mode", "line"),
    [
        ("eval", "error: undefined variable 'cudaPackages_13_9'"),
        ("build", "ninja: build stopped: subcommand failed."),
    ],
)
def test_permanent_failures_stop_the_stack_without_retry(
    checkout: Path, env: dict[str, str], mode: str, line: str
) -> None:
    run_env = {**env, "FLOX_DOUBLE_FAIL": f"{BASE}={mode}"}
    outcomes = dict(
        (v.name, o)
        for v, o in flox_build.build_variants(
            _chosen(VISION, OTHER, BASE), _builder(checkout, run_env, [])
        )
    )
    assert _calls(env) == [["build", BASE], ["build", OTHER]]
    assert outcomes[BASE].status is Status.FAILED and outcomes[BASE].attempts == 1
    assert line in outcomes[BASE].log_tail
    assert outcomes[VISION].status is Status.SKIPPED
    assert outcomes[OTHER].status is Status.PASSED


def test_a_recipe_nix_refuses_is_a_failed_build_with_nix_message(
    run_cli: CliRunner, tmp_path: Path, env: dict[str, str]
) -> None:
    broken = "{ fetchPinnedNixpkgs ? null }: cudaPackages_13_9.cudnn\n"
    work = make_repo(tmp_path, {f".flox/pkgs/{OTHER}.nix": broken})
    out = tmp_path / "one.json"
    done = _cli(run_cli, work, env, OTHER, "--result-json", str(out))
    assert done.returncode == 1
    assert _calls(env) == [["build", OTHER]]  # an evaluation error is not retried
    record = results.load(out)
    assert record.build is not None and record.build.status is Status.FAILED
    assert "undefined variable 'cudaPackages_13_9'" in record.build.log_tail


def test_a_recipe_using_flox_nixpkgs_builds_the_wrong_torch(
    run_cli: CliRunner, tmp_path: Path, env: dict[str, str]
) -> None:
    takes_pkgs = recipe(OTHER, "{ pkgs }: pkgs.python313Packages.torch\n")
    work = make_repo(tmp_path, {f".flox/pkgs/{OTHER}.nix": takes_pkgs})
    out = tmp_path / "one.json"
    done = _cli(run_cli, work, env, OTHER, "--result-json", str(out))
    assert done.returncode == 0, done.stderr
    record = results.load(out)
    assert record.build is not None
    # The build passed, silently, with flox's torch: only a version check catches it.
    assert (record.build.store_path or "").endswith("-torch-2.7.0")


def test_an_environment_flox_cannot_open_fails_the_build(
    run_cli: CliRunner, checkout: Path, env: dict[str, str], tmp_path: Path
) -> None:
    (checkout / ".flox" / "env.json").unlink()
    out = tmp_path / "one.json"
    done = _cli(run_cli, checkout, env, OTHER, "--result-json", str(out))
    assert done.returncode == 1
    record = results.load(out)
    assert record.build is not None
    assert "unable to locate an 'env.json'" in record.build.log_tail


def test_a_built_result_without_python_is_a_failed_test_on_record(
    run_cli: CliRunner, checkout: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The double's outputs are placeholders with no Python in their closure: `ci-tools test`
    records that as a failed test (exit 1), not as bad input with no record (exit 2)."""
    out = tmp_path / "records"
    assert _cli(run_cli, checkout, env, OTHER, "--results", str(out)).returncode == 0
    store_env = store_environment(env)  # the job's Nix sees the double's private store
    catalog = str(REPO_ROOT / "catalog.yaml")
    args = ("test", "--catalog", catalog, "--branch", "main", "--results", str(out), OTHER)
    done = run_cli(*args, cwd=checkout, env=store_env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    record = results.load(results.result_path(out, OTHER))
    assert record.build is not None and record.build.status is Status.PASSED
    assert record.test is not None and record.test.status is Status.FAILED
    (check,) = record.test.checks
    assert check.name == "interpreter" and "holds no Python 3.13 interpreter" in check.detail


def test_a_version_the_pin_lacks_fails_at_evaluation_and_is_not_retried(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    """main's pytorch set to 2.13.0 with no source override: the recipe evaluates against the
    pin's 2.8.0, and the builder stops `flox build` in its evaluation, naming both versions."""
    from ci_tools.render import recipes

    text = (REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    text = text.replace('versions: {pytorch: "2.8.0",', 'versions: {pytorch: "2.13.0",', 1)
    catalog_file = tmp_path / "catalog.yaml"
    catalog_file.write_text(text, encoding="utf-8")
    catalog = load_catalog(catalog_file, display_name="catalog.yaml")
    rendered = recipes.render_branch(catalog, "main", recipes.environment())
    files = {f".flox/pkgs/{f.path}": f.text for f in rendered if f.path == f"{OTHER}.nix"}
    for path in sorted((REPO_ROOT / "nix").rglob("*.nix")):
        files[path.relative_to(REPO_ROOT).as_posix()] = path.read_text(encoding="utf-8")
    work = make_repo(tmp_path, {"catalog.yaml": text, **files})
    env = double_environment(tmp_path)
    env["FLOX_DOUBLE_FETCH"] = str(REPO_ROOT / "tests/nix/nixpkgs-double/fetch.nix")
    out = tmp_path / "records"
    done = run_cli("build", "--branch", "main", OTHER, "--results", str(out), cwd=work, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert _calls(env) == [["build", OTHER]]  # evaluation errors are never retried
    record = results.load(results.result_path(out, OTHER))
    assert record.build is not None and record.build.status is Status.FAILED
    tail = " ".join(record.build.log_tail.split())
    assert (
        "catalog.yaml says pytorch 2.13.0, but the pinned nixpkgs' python313Packages.torch is 2.8.0"
        in tail
    )
    assert "Add `sources.pytorch` with version 2.13.0 and its hash" in tail
    assert record.build.seconds < 60
