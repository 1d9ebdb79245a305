"""Build once, test elsewhere (issue 18 item 1), through the commands and real Nix: `ci-tools
build` signs and pushes each closure to the `file://` binary cache runners.yaml names, and
`ci-tools test --substitute` on another machine's store takes it from there without building;
a cache that cannot be written at push time leaves "built, not pushed", and the test leg that
needs the path fails naming why. The signing key appears in no output and no record."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools.build import results
from ci_tools.build.results import CacheStatus, Status
from tests.conftest import REPO_ROOT
from tests.doubles.flox.test_flox_double import (
    double_environment,
    make_repo,
    recipe,
    store_environment,
)

CliRunner = Callable[..., subprocess.CompletedProcess[str]]
VARIANT = "pytorch-python313-cpu-avx2"
CATALOG = str(REPO_ROOT / "catalog.yaml")

pytestmark = pytest.mark.skipif(
    shutil.which("nix") is None or shutil.which("nix-instantiate") is None,
    reason="needs Nix (Debian's nix-bin)",
)


def _keypair(tmp: Path) -> tuple[str, str]:
    secret, public = tmp / "key.sec", tmp / "key.pub"
    subprocess.run(
        ["nix-store", "--generate-binary-cache-key", "fleet-1", str(secret), str(public)],
        check=True,
    )
    return secret.read_text().strip(), public.read_text().strip()


def _runners(tmp: Path, url: str, public: str) -> Path:
    path = tmp / "runners.yaml"
    path.write_text(
        "builders:\n  x86_64-linux:\n    labels: [self-hosted]\n"
        f'cache:\n  url: {url}\n  public_keys: ["{public}"]\n'
        "  signing_key_secret: NIX_CACHE_SIGNING_KEY\n",
        encoding="utf-8",
    )
    return path


def _fleet(tmp_path: Path, url: str) -> tuple[Path, dict[str, str], Path, str]:
    """A checkout, the build leg's environment (the flox double's store as its Nix store),
    the inventory and the signing key."""
    env = store_environment(double_environment(tmp_path))
    checkout = make_repo(tmp_path, {f".flox/pkgs/{VARIANT}.nix": recipe(VARIANT)})
    secret, public = _keypair(tmp_path)
    return checkout, env, _runners(tmp_path, url.format(tmp=tmp_path), public), secret


def _tester(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """Another runner: the same store folder, its own files and database, its own flox log."""
    root = tmp_path / "tester"
    return {
        **env,
        "NIX_REMOTE": f"local?real={root}/store&state={root}/var&log={root}/log",
        "FLOX_DOUBLE_LOG": str(tmp_path / "tester-flox.log"),
    }


def _both_legs(
    run_cli: CliRunner, tmp_path: Path, url: str
) -> tuple[
    subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], Path, str, dict[str, str]
]:
    checkout, env, runners, secret = _fleet(tmp_path, url)
    out = tmp_path / "records"
    common = ("--catalog", CATALOG, "--branch", "main", "--runners", str(runners))
    built = run_cli(
        "build", VARIANT, *common, "--results", str(out), cwd=checkout,
        env={**env, "CI_TOOLS_SIGNING_KEY": secret},
    )  # fmt: skip
    tester = _tester(tmp_path, env)
    tested = run_cli(
        "test", VARIANT, "--substitute", *common, "--results", str(out), cwd=checkout, env=tester
    )
    for said in (built.stdout, built.stderr, tested.stdout, tested.stderr):
        assert secret not in said and secret.split(":", 1)[1] not in said
    record_text = results.result_path(out, VARIANT).read_text(encoding="utf-8")
    assert secret.split(":", 1)[1] not in record_text
    return built, tested, out, secret, tester


def test_the_test_leg_takes_the_build_from_the_cache_and_builds_nothing(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    built, tested, out, _, tester = _both_legs(run_cli, tmp_path, "file://{tmp}/cache")
    assert built.returncode == 0, built.stdout + built.stderr
    record = results.load(results.result_path(out, VARIANT))
    assert record.build is not None and record.build.cache is not None
    assert record.build.cache.status is CacheStatus.PUSHED, record.build.cache
    path = record.build.store_path or ""
    # The test leg's store now holds the path, copied (signed), not built: no flox call there.
    check = subprocess.run(["nix-store", "--check-validity", path], env=tester, check=False)
    assert check.returncode == 0
    assert not Path(tester["FLOX_DOUBLE_LOG"]).exists()
    assert record.test is not None
    checks = {c.name: c for c in record.test.checks}
    assert "substitute" not in checks, checks  # it got the build; what it found there is judged
    assert tested.returncode == 1 and "interpreter" in checks  # the double's build has no Python


def test_a_cache_that_cannot_be_written_leaves_built_not_pushed_and_fails_the_test_leg(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a folder\n", encoding="utf-8")
    built, tested, out, _, tester = _both_legs(run_cli, tmp_path, "file://{tmp}/a-file/cache")
    assert built.returncode == 0, built.stdout + built.stderr  # the build itself passed
    assert "built, not pushed" in built.stderr
    record = results.load(results.result_path(out, VARIANT))
    assert record.build is not None and record.build.status is Status.PASSED
    assert record.build.cache is not None
    assert record.build.cache.status is CacheStatus.NOT_PUSHED
    assert tested.returncode == 1
    assert record.test is not None
    (check,) = record.test.checks
    assert (check.name, check.status) == ("substitute", Status.FAILED)
    assert "not pushed to" in check.detail and "re-run the build leg" in check.detail
    assert not Path(tester["FLOX_DOUBLE_LOG"]).exists()
    data = json.loads(results.result_path(out, VARIANT).read_text(encoding="utf-8"))
    assert data["build"]["cache"]["status"] == "not-pushed"
