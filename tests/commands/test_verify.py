"""`ci-tools verify` with the real Nix on paths of a local store (issue 29 item 5): the
published bytes match (exit 0), a path changed on disk after it was registered is refused
(exit 1), and bad input is exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ci_tools import cli
from ci_tools.base import narinfo
from ci_tools.ship import manifest
from tests import privatestore

pytestmark = privatestore.needs_nix
VARIANT = "pytorch-python313-cpu-avx2"


def _world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, Any], Path]:
    """A store path of a small tree in this test's store, its manifest entry, the file."""
    env = privatestore.store_env(tmp_path / "root")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    tree = privatestore.payload(tmp_path, "torch", {"lib/libtorch.so": "ELF", "bin/python": "#"})
    path = privatestore.add(env, tree)
    info = narinfo.one(path, env)
    entry = {
        "variant": VARIANT,
        "store_path": path,
        "nar_hash": info.nar_hash,
        "nar_size": info.nar_size,
        "sha256": info.hex_digest,
        "proof": "ran every check on a CPU with avx2",
        "proven_on": "cpu-box-1",
        "route": "cpu",
        "org": "acme",
    }
    data = {
        "kind": manifest.KIND,
        "schema": manifest.SCHEMA,
        "tag": "main-1a2b3c4d5e6f",
        "repository": "acme/torch-builds",
        "variants": [entry],
    }
    file = tmp_path / "manifest.json"
    file.write_text(json.dumps(data), encoding="utf-8")
    return path, data, file


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(["verify", *args])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out + out.err


def test_the_published_bytes_match_by_name_and_by_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, data, file = _world(tmp_path, monkeypatch)
    for target in (VARIANT, path):
        code, said = _verify(capsys, target, "--manifest", str(file))
        assert code == 0, said
        assert f"OK: {path} has NAR hash {data['variants'][0]['nar_hash']}" in said
        assert "proven: ran every check on a CPU with avx2 (checks ran on cpu-box-1" in said
        assert f"nix-store --dump {path} > {VARIANT}.nar && gh attestation verify " in said
        assert (
            "--repo acme/torch-builds --signer-workflow acme/torch-builds/.github/workflows/release.yml"
            in said
        )


def test_a_path_changed_on_disk_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, data, file = _world(tmp_path, monkeypatch)
    privatestore.tamper(path, "lib/libtorch.so", "ELF with a backdoor")
    code, said = _verify(capsys, VARIANT, "--manifest", str(file))
    assert code == 1
    assert "MISMATCH" in said and data["variants"][0]["nar_hash"] in said
    assert "gh attestation" not in said


def test_a_published_path_not_in_this_store_is_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, data, file = _world(tmp_path, monkeypatch)
    data["variants"][0]["store_path"] = path.replace(Path(path).name[:32], "0" * 32)
    file.write_text(json.dumps(data), encoding="utf-8")
    code, said = _verify(capsys, VARIANT, "--manifest", str(file))
    assert code == 1 and "NOT HERE" in said


@pytest.mark.parametrize(
    ("target", "manifest_text", "message"),
    [
        ("-v", None, "neither a variant name nor a store path"),
        ("/etc/passwd", None, "is not a Nix store path"),
        ("pytorch-python313-cpu-avx512", None, "lists no published pytorch-python313-cpu-avx512"),
        (VARIANT, "{", "not JSON"),
        (VARIANT, '{"kind": "x"}', "not a ci-tools release manifest"),
    ],
)
def test_bad_input_is_exit_2_naming_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    manifest_text: str | None,
    message: str,
) -> None:
    _path, _data, file = _world(tmp_path, monkeypatch)
    if manifest_text is not None:
        file.write_text(manifest_text, encoding="utf-8")
    code, said = _verify(capsys, "--manifest", str(file), "--", target)
    assert code == 2 and message in said, said
