"""The release manifest and the attestation's subjects (issue 29 items 2 and 4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ci_tools.base.errors import InputError
from ci_tools.ship import manifest

HASH = "sha256-/HGClOh0WbqW+4FonkXSTUnqA1WYVM12RYHshoFkrW4="
HEX = "fc718294e87459ba96fb81689e45d24d49ea03559854cd764581ec868164ad6e"


def _entry(variant: str) -> dict[str, Any]:
    return {
        "variant": variant,
        "store_path": f"/nix/store/{'a' * 32}-{variant}",
        "nar_hash": HASH,
        "nar_size": 648,
        "sha256": HEX,
        "proof": "ran on a CPU",
        "proven_on": "box",
        "route": "cpu",
        "org": "acme",
    }


def _manifest(count: int) -> dict[str, Any]:
    return {
        "kind": manifest.KIND,
        "schema": manifest.SCHEMA,
        "variants": [_entry(f"v{i}") for i in range(count)],
    }


def test_subjects_split_above_1024() -> None:
    files = manifest.subject_files(_manifest(2049))
    assert [f.count("\n") for f in files] == [1024, 1024, 1]
    assert files[0].splitlines()[0] == f"{HEX}  v0"
    assert manifest.subject_files(_manifest(0)) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sha256", "0" * 64),
        ("nar_hash", "sha256:abc"),
        ("nar_size", -1),
        ("nar_size", "648"),
        ("variant", "../x"),
        ("extra", "x"),
    ],
)
def test_a_malformed_entry_is_refused_naming_it(field: str, value: object) -> None:
    data = _manifest(2)
    data["variants"][1][field] = value
    with pytest.raises(InputError, match=r"m.json: variants\[1\]"):
        manifest.entries(data, "m.json")


def test_a_manifest_reads_back() -> None:
    data = _manifest(2)
    found = manifest.entries(copy.deepcopy(data), "m.json")
    assert manifest.find(found, variant="v1", store_path=None) == found[1]
    assert manifest.find(found, variant=None, store_path=data["variants"][0]["store_path"])
    with pytest.raises(InputError, match="not a ci-tools release manifest"):
        manifest.entries({"variants": []}, "m.json")
