"""`ci-tools release` attaches what lets anyone check a published variant (issue 29 items 2-4):
the manifest (store path, NAR hash, proof, where proven) of the published variants only, the
SBOM of each whose bytes it is, and the attestation's subject-checksums files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ci_tools import cli
from ci_tools.base import narinfo
from ci_tools.base.narinfo import PathInfo, sri_to_hex
from ci_tools.build import results
from ci_tools.build.results import Output, Route
from ci_tools.ship import manifest, sbom
from tests import privatestore
from tests.commands.test_release import CPU, TAG, _record, _release, _save, double
from tests.doubles.github.server import GitHubDouble

__all__ = ["double"]  # the fixture, used by name

AVX512 = "pytorch-python313-cpu-avx512"
VNNI = "pytorch-python313-cpu-avx512vnni"
HASH = "sha256-/HGClOh0WbqW+4FonkXSTUnqA1WYVM12RYHshoFkrW4="
OTHER = "sha256-" + "B" * 43 + "="
STORE = "/nix/store/mz8933sqf5hshfwxx58gb7152asdp4y6-pytorch-python313-cpu-avx2-2.9.1"
VNNI_STORE = "/nix/store/0c8wjn7bs9x7v7fgxm6lh1mzj33xz3ff-pytorch-python313-cpu-avx512vnni"


def _bound(name: str, store_path: str, nar_hash: str, **kwargs: object) -> results.ResultRecord:
    record = _record(name, **kwargs)  # type: ignore[arg-type]
    assert record.build is not None and record.test is not None
    output = Output(store_path=store_path, nar_hash=nar_hash, nar_size=648)
    build = dataclasses.replace(record.build, store_path=store_path, outputs=(output,))
    test = dataclasses.replace(record.test, runner="gpu-box-1", route=Route(scope="cpu"))
    return record.with_build(build).with_test(test)


def _sbom(folder: Path, variant: str, store_path: str, nar_hash: str) -> None:
    info = PathInfo(path=store_path, nar_hash=nar_hash, nar_size=648)
    document = sbom.cyclonedx(variant, store_path, [info], tool_version="0")
    (folder / sbom.file_name(variant)).write_text(json.dumps(document), encoding="utf-8")


def test_the_release_carries_manifest_sboms_and_subjects(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = _bound(VNNI, VNNI_STORE, OTHER, published=False)
    folder = _save(tmp_path / "r", _bound(CPU, STORE, HASH), _record(AVX512), failed)
    _sbom(folder, CPU, STORE, HASH)
    _sbom(folder, VNNI, VNNI_STORE, OTHER)
    subjects = tmp_path / "subjects"
    code, said = _release(capsys, "--results", str(folder), "--subjects", str(subjects))
    assert code == 1, said  # the failed publish
    data = json.loads(double.asset_bytes(TAG, manifest.manifest_name(TAG)) or b"{}")
    [entry] = data["variants"]
    assert entry["variant"] == CPU and entry["store_path"] == STORE and entry["nar_hash"] == HASH
    assert entry["sha256"] == sri_to_hex(HASH) and entry["proven_on"] == "gpu-box-1"
    assert entry["route"] == "cpu" and entry["proof"] and entry["org"] == "acme"
    assert data["unbound"] == [AVX512] and data["repository"] == "acme/torch-builds"
    assert f"{AVX512}: published without a NAR hash" in said
    assert manifest.entries(data, "asset")[0].variant == CPU
    attached = double.asset_bytes(TAG, sbom.file_name(CPU))
    assert attached is not None and sbom.top_nar_hash(json.loads(attached)) == HASH
    assert double.asset_bytes(TAG, sbom.file_name(VNNI)) is None
    assert (subjects / "subjects-0.txt").read_text() == f"{sri_to_hex(HASH)}  {CPU}\n"
    assert sorted(p.name for p in subjects.iterdir()) == ["subjects-0.txt"]


def test_an_sbom_of_other_bytes_is_not_attached(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _save(tmp_path / "r", _bound(CPU, STORE, HASH))
    _sbom(folder, CPU, STORE, OTHER)
    code, said = _release(capsys, "--results", str(folder))
    assert code == 0 and "of other bytes" in said
    assert double.asset_bytes(TAG, sbom.file_name(CPU)) is None
    assert double.asset_bytes(TAG, manifest.manifest_name(TAG)) is not None


@privatestore.needs_nix
def test_verify_reads_the_manifest_from_the_release(
    double: GitHubDouble,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 29 item 5: `ci-tools verify --release TAG` reads the asset the release attached."""
    env = privatestore.store_env(tmp_path / "root")
    for key, value in env.items():
        if key != "PATH":
            monkeypatch.setenv(key, value)
    path = privatestore.add(env, privatestore.payload(tmp_path, "torch", {"a": "x"}))
    info = narinfo.one(path, env)
    folder = _save(tmp_path / "r", _bound(CPU, path, info.nar_hash))
    assert _release(capsys, "--results", str(folder))[0] == 0
    assert cli.main(["verify", CPU, "--release", TAG]) == 0
    assert f"OK: {path} has NAR hash {info.nar_hash}" in capsys.readouterr().out
    privatestore.tamper(path, "a", "y")
    assert cli.main(["verify", path, "--release", TAG]) == 1
    assert cli.main(["verify", CPU, "--release", "main-000000000000"]) == 2


def test_the_attestation_jobs_subjects_are_read_back_from_the_release(
    double: GitHubDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subjects = tmp_path / "subjects"
    assert _release(capsys, "--subjects", str(subjects))[0] == 0  # no release yet: none
    assert list(subjects.iterdir()) == []
    folder = _save(tmp_path / "r", _bound(CPU, STORE, HASH), _record(AVX512))
    assert _release(capsys, "--results", str(folder))[0] == 0
    code, said = _release(capsys, "--subjects", str(subjects))
    assert code == 0 and "1 subjects of release" in said
    assert (subjects / "subjects-0.txt").read_text() == f"{sri_to_hex(HASH)}  {CPU}\n"
