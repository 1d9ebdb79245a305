"""A CycloneDX 1.6 SBOM of one variant's runtime closure, from `nix path-info --recursive
--json` on the runner that holds the path (pure: path infos in, JSON out).

One component per store path: its name and version as builtins.parseDrvName splits the path's
name, its NAR hash as the SHA-256 hash, and the properties of nixpkgs' CycloneDX taxonomy
(nixpkgs doc/interoperability/cyclonedx.md, "`nix` Namespace Property Taxonomy": `nix:store_path`,
`nix:narinfo:store_path`, `nix:narinfo:nar_hash`, `nix:narinfo:nar_size`,
`nix:narinfo:references`, whitespace-separated). The dependencies are the references, a
path's reference to itself left out. The variant's own path is `metadata.component`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ci_tools.base.narinfo import PathInfo, name_and_version, sri_to_hex

SPEC_VERSION = "1.6"
SUFFIX = ".cdx.json"
# uuid5 namespace of ci-tools' SBOM serial numbers: the same closure gets the same serial.
_NAMESPACE = uuid.UUID("6f1d3c2e-8a4b-5c7d-9e0f-1a2b3c4d5e6f")


def file_name(variant: str) -> str:
    return f"{variant}{SUFFIX}"


def component(info: PathInfo, kind: str = "library") -> dict[str, Any]:
    name, version = name_and_version(info.path)
    refs = " ".join(r for r in info.references if r != info.path)
    properties = [
        ("nix:store_path", info.path),
        ("nix:narinfo:store_path", info.path),
        ("nix:narinfo:nar_hash", info.nar_hash),
        ("nix:narinfo:nar_size", str(info.nar_size)),
        *([("nix:narinfo:references", refs)] if refs else []),
    ]
    made: dict[str, Any] = {"type": kind, "bom-ref": info.path, "name": name}
    if version:
        made["version"] = version
    made["hashes"] = [{"alg": "SHA-256", "content": sri_to_hex(info.nar_hash)}]
    made["properties"] = [{"name": n, "value": v} for n, v in properties]
    return made


def cyclonedx(
    variant: str, top: str, closure: Sequence[PathInfo], *, tool_version: str
) -> dict[str, Any]:
    """The SBOM of `top`'s closure (`closure` holds `top`); ValueError when it does not."""
    by_path = {info.path: info for info in closure}
    if top not in by_path:
        raise ValueError(f"{top} is not in its own closure: nix path-info answered for others")
    own = by_path[top]
    serial = uuid.uuid5(_NAMESPACE, f"{variant} {top} {own.nar_hash}")
    return {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC_VERSION,
        "serialNumber": f"urn:uuid:{serial}",
        "version": 1,
        "metadata": {
            "tools": {
                "components": [{"type": "application", "name": "ci-tools", "version": tool_version}]
            },
            "component": {**component(own, "application"), "description": variant},
        },
        "components": [component(by_path[p]) for p in sorted(by_path) if p != top],
        "dependencies": [
            {
                "ref": path,
                "dependsOn": sorted(
                    r for r in by_path[path].references if r != path and r in by_path
                ),
            }
            for path in sorted(by_path)
        ],
    }


def top_nar_hash(document: object) -> str | None:
    """The NAR hash an SBOM states for its variant's own path (`metadata.component`)."""
    try:
        props = document["metadata"]["component"]["properties"]  # type: ignore[index]
        return str(next(p["value"] for p in props if p["name"] == "nix:narinfo:nar_hash"))
    except (KeyError, TypeError, StopIteration):
        return None
