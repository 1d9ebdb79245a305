"""What Nix says of store paths' bytes, in every shape Nix has printed it (issue 29 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools.base import narinfo
from tests import privatestore

# The same digest three ways: `nix path-info --json` of Nix 2.8 (SRI), the `ca` field's nix32
# of the same `nix-store --add`, and sha256sum of `nix-store --dump` (measured here).
SRI = "sha256-/HGClOh0WbqW+4FonkXSTUnqA1WYVM12RYHshoFkrW4="
NIX32 = "sha256:0vmdcj0qdv418mvcsm4qal1yljads92rws41zfbblnblx2a84wgw"
HEX = "fc718294e87459ba96fb81689e45d24d49ea03559854cd764581ec868164ad6e"
PATH = "/nix/store/mz8933sqf5hshfwxx58gb7152asdp4y6-payload"


@pytest.mark.parametrize("form", [SRI, NIX32, HEX, "sha256:" + HEX])
def test_every_form_nix_prints_is_one_digest(form: str) -> None:
    assert narinfo.normalise(form) == SRI
    assert narinfo.sri_to_hex(SRI) == HEX


@pytest.mark.parametrize("bad", ["", "md5-abc", "sha256:" + "e" * 52, HEX[:-1], "sha512-x"])
def test_what_is_no_sha256_is_refused(bad: str) -> None:
    assert narinfo.normalise(bad) is None


def test_the_list_of_nix_2_8_and_the_object_of_nix_2_19_read_alike() -> None:
    entry = {"narHash": SRI, "narSize": 648, "references": [PATH]}
    as_list = json.dumps([{"path": PATH, **entry}])
    as_object = json.dumps({PATH: {**entry, "narHash": NIX32}})
    assert narinfo.parse(as_list) == narinfo.parse(as_object)
    [info] = narinfo.parse(as_object)
    assert info.nar_hash == SRI and info.nar_size == 648 and info.references == (PATH,)


@pytest.mark.parametrize(
    "text",
    ["", "{", "3", json.dumps([{"path": PATH, "valid": False}]), json.dumps({PATH: None})],
)
def test_an_answer_without_a_hash_is_an_error(text: str) -> None:
    with pytest.raises(narinfo.NarInfoError):
        narinfo.parse(text)


def test_name_and_version_as_parse_drv_name_splits_them() -> None:
    split = narinfo.name_and_version
    assert split("/nix/store/" + "a" * 32 + "-python3.13-torch-2.9.1") == (
        "python3.13-torch",
        "2.9.1",
    )
    assert split("/nix/store/" + "a" * 32 + "-glibc-2.40-66-bin") == ("glibc", "2.40-66-bin")
    assert split("/nix/store/" + "a" * 32 + "-source") == ("source", "")


@privatestore.needs_nix
def test_the_real_nix_registers_and_recomputes_the_same_hash(tmp_path: Path) -> None:
    env = privatestore.store_env(tmp_path / "root")
    tree = privatestore.payload(tmp_path, "payload", {"a": "hi\n", "sub/b": "there\n"})
    path = privatestore.add(env, tree)
    info = narinfo.one(path, env)
    assert narinfo.nar_hash_on_disk(path, env) == info.nar_hash
    privatestore.tamper(path, "sub/b", "changed\n")
    assert narinfo.one(path, env).nar_hash == info.nar_hash  # the database still says so
    assert narinfo.nar_hash_on_disk(path, env) != info.nar_hash


@privatestore.needs_nix
def test_a_path_the_store_lacks_is_an_error(tmp_path: Path) -> None:
    env = privatestore.store_env(tmp_path / "root")
    missing = env["NIX_STORE_DIR"] + "/" + "a" * 32 + "-missing"
    with pytest.raises(narinfo.NarInfoError, match="not valid in this store"):
        narinfo.one(missing, env)
