"""The SBOM of a variant's runtime closure is CycloneDX 1.6, checked against the official
schema (the copy cyclonedx-python-lib ships) on a closure the real Nix built (issue 29 item 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ci_tools.base import narinfo
from ci_tools.build.results import BuildOutcome, Output, Status
from ci_tools.commands import _sbom
from ci_tools.ship import sbom
from tests import privatestore

jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")
cyclonedx = pytest.importorskip("cyclonedx")

SCHEMAS = Path(cyclonedx.__file__).parent / "schema" / "_res"


def _validator() -> Any:
    """bom-1.6 with the two schemas it refers to (spdx, jsf) resolved from the same folder."""
    resources = []
    for name in ("spdx.SNAPSHOT.schema.json", "jsf-0.82.SNAPSHOT.schema.json"):
        schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
        resource = referencing.Resource.from_contents(schema, referencing.jsonschema.DRAFT7)
        # bom-1.6 refers to them by file name, relative to its $id's folder
        resources.append((f"http://cyclonedx.org/schema/{name}", resource))
    bom = json.loads((SCHEMAS / "bom-1.6.SNAPSHOT.schema.json").read_text(encoding="utf-8"))
    registry = referencing.Registry().with_resources(resources)
    cls = jsonschema.validators.validator_for(bom)
    return cls(bom, registry=registry, format_checker=cls.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def closure(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[narinfo.PathInfo]]:
    if shutil.which("nix-store") is None or shutil.which("nix") is None:
        pytest.skip("needs nix-bin")
    tmp = tmp_path_factory.mktemp("sbom")
    env = privatestore.store_env(tmp / "root")
    top = privatestore.build_closure(env, tmp)
    return top, narinfo.path_info([top], env, recursive=True)


def test_the_sbom_of_a_real_closure_is_valid_cyclonedx_1_6(
    closure: tuple[str, list[narinfo.PathInfo]],
) -> None:
    top, infos = closure
    document = sbom.cyclonedx("pytorch-python313-cpu-avx2", top, infos, tool_version="0.1")
    errors = sorted(_validator().iter_errors(document), key=str)
    assert not errors, "\n".join(e.message for e in errors[:5])
    assert len(infos) == 3 and len(document["components"]) == 2
    names = {(c["name"], c.get("version")) for c in document["components"]}
    assert names == {("libfoo", "1.2.3"), ("python3", "3.13.1")}
    own = document["metadata"]["component"]
    assert (own["name"], own["version"]) == ("python3.13-torch", "2.9.1")
    info = {i.path: i for i in infos}[top]
    props = {p["name"]: p["value"] for p in own["properties"]}
    assert props["nix:store_path"] == top and props["nix:narinfo:nar_hash"] == info.nar_hash
    assert props["nix:narinfo:nar_size"] == str(info.nar_size)
    assert own["hashes"] == [{"alg": "SHA-256", "content": info.hex_digest}]
    deps = {d["ref"]: d["dependsOn"] for d in document["dependencies"]}
    assert deps[top] == sorted(p for p in info.references if p != top) and len(deps[top]) == 2
    assert sbom.top_nar_hash(document) == info.nar_hash


def test_the_schema_check_can_fail(closure: tuple[str, list[narinfo.PathInfo]]) -> None:
    top, infos = closure
    document = sbom.cyclonedx("v", top, infos, tool_version="0.1")
    document["components"][0]["hashes"][0]["content"] = "not hex"
    del document["bomFormat"]
    assert len(list(_validator().iter_errors(document))) >= 2


def test_a_closure_without_its_top_is_refused(
    closure: tuple[str, list[narinfo.PathInfo]],
) -> None:
    top, infos = closure
    with pytest.raises(ValueError, match="not in its own closure"):
        sbom.cyclonedx("v", top, [i for i in infos if i.path != top], tool_version="0.1")


def test_the_build_leg_writes_the_sbom_beside_the_record(
    closure: tuple[str, list[narinfo.PathInfo]], tmp_path: Path
) -> None:
    top, infos = closure
    own = {i.path: i for i in infos}[top]
    output = Output(store_path=top, nar_hash=own.nar_hash, nar_size=own.nar_size)
    outcome = BuildOutcome(status=Status.PASSED, seconds=1.0, store_path=top, outputs=(output,))
    record = tmp_path / "results" / "v.result.json"
    record.parent.mkdir()
    env = privatestore.store_env(Path(top).parent.parent)
    _sbom.write("v", outcome, [record], env)
    document = json.loads((tmp_path / "results" / "v.cdx.json").read_text(encoding="utf-8"))
    assert sbom.top_nar_hash(document) == own.nar_hash and len(document["components"]) == 2
    _sbom.write("w", BuildOutcome(status=Status.PASSED, seconds=1.0), [record], env)
    assert not (tmp_path / "results" / "w.cdx.json").exists()
