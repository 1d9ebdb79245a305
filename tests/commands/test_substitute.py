"""`ci-tools test --substitute` hands nix-store only a store path: a build record's
`store_path` that is no `/nix/store/<32 base32 chars>-<name>` (an option such as `-v`, a path
that climbs out of the store) is refused naming the record, and nix-store never runs (issue
29, item 1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ci_tools.base import narinfo
from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Output, ResultRecord, Status
from ci_tools.commands import _substitute
from tests import privatestore

VARIANT = "pytorch-python313-cpu-avx2"
GOOD = "/nix/store/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3ff-pytorch-python313-cpu-avx2-2.9.1"


def _world(tmp_path: Path, store_path: str) -> tuple[Path, dict[str, str], Path]:
    """A build record naming `store_path`, and a nix-store on PATH that logs its arguments."""
    record = ResultRecord(
        variant=VARIANT,
        package="pytorch",
        branch="main",
        platform="x86_64-linux",
        build=BuildOutcome(status=Status.PASSED, seconds=1.0, store_path=store_path),
    )
    path = results.result_path(tmp_path / "results", VARIANT)
    path.parent.mkdir()
    results.save(record, path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "nix-store.log"
    fake = bin_dir / "nix-store"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexit 0\n', encoding="utf-8")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return path, env, log


@pytest.mark.parametrize(
    "store_path",
    [
        "-v",
        "--delete",
        "/nix/store/../../etc/passwd",
        "/nix/store/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3ff-torch/../../../etc",
        "/nix/store/short-torch",
        "/nix/store/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3fe-torch",  # e is no Nix base32 digit
        "/nix/store/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3ff-.hidden",
        "/nix/store/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3ff-torch\n-v",
        "/tmp/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3ff-torch",
        "nix/store/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3ff-torch",
    ],
)
def test_a_store_path_that_is_no_store_path_never_reaches_nix_store(
    tmp_path: Path, store_path: str
) -> None:
    path, env, log = _world(tmp_path, store_path)
    with pytest.raises(InputError, match=r"build.store_path .* is not a Nix store path") as caught:
        _substitute.build_of([path], VARIANT, None, tmp_path / "result", env)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not log.exists(), log.read_text(encoding="utf-8")


def test_a_store_path_under_the_store_reaches_nix_store(tmp_path: Path) -> None:
    path, env, log = _world(tmp_path, GOOD)
    got = _substitute.build_of([path], VARIANT, None, tmp_path / "result", env)
    assert got.failure is None and not got.skip
    assert log.read_text(encoding="utf-8").splitlines()[0] == f"--check-validity {GOOD}"


def test_the_store_folder_is_nixs_own(tmp_path: Path) -> None:
    elsewhere = GOOD.replace("/nix/store", str(tmp_path / "store"))
    path, env, log = _world(tmp_path, elsewhere)
    with pytest.raises(InputError, match="is not a Nix store path"):
        _substitute.build_of([path], VARIANT, None, tmp_path / "result", env)
    env["NIX_STORE_DIR"] = str(tmp_path / "store")
    assert _substitute.build_of([path], VARIANT, None, tmp_path / "result", env).failure is None
    assert log.exists()


def _recorded(tmp_path: Path, store_path: str, nar_hash: str) -> Path:
    record = ResultRecord(
        variant=VARIANT,
        package="pytorch",
        branch="main",
        platform="x86_64-linux",
        build=BuildOutcome(
            status=Status.PASSED,
            seconds=1.0,
            store_path=store_path,
            outputs=(Output(store_path=store_path, nar_hash=nar_hash, nar_size=1),),
        ),
    )
    path = results.result_path(tmp_path / "results", VARIANT)
    path.parent.mkdir(exist_ok=True)
    results.save(record, path)
    return path


@privatestore.needs_nix
def test_a_path_whose_nar_hash_is_not_the_builds_is_not_tested(tmp_path: Path) -> None:
    """Issue 29 item 2: the test leg tests the bytes the build recorded, or none."""
    env = privatestore.store_env(tmp_path / "root")
    store_path = privatestore.add(env, privatestore.payload(tmp_path, "torch", {"a": "x\n"}))
    built = narinfo.one(store_path, env).nar_hash
    other = "sha256-" + "A" * 43 + "="
    record = _recorded(tmp_path, store_path, other)
    got = _substitute.build_of([record], VARIANT, None, tmp_path / "result", env)
    assert got.failure is not None and got.failure.status is Status.FAILED
    assert f"NAR hash {built}" in got.failure.detail and other in got.failure.detail
    assert not (tmp_path / "result").exists()
    record = _recorded(tmp_path, store_path, built)
    got = _substitute.build_of([record], VARIANT, None, tmp_path / "result", env)
    assert got.failure is None and (tmp_path / "result").resolve() == Path(store_path)
