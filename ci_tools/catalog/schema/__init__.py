"""The JSON Schemas of `catalog.yaml` and `runners.yaml`, built from `ci_tools.catalog.grammar`.

The shipped files (`catalog.schema.json`, `runners.schema.json` next to this module) are the
output of `python3 -m ci_tools.catalog.schema`; tests/fuzz/test_schema.py checks they are current and
that schema and loader reach the same verdict on the fuzz corpus. Editors read them through
the `# yaml-language-server: $schema=...` line at the top of both files. The loader does not
validate through them (`ci-tools matrix` would pay for jsonschema at every start); the schema
states the shape and value grammar, the loader also the rules that relate tables.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from ci_tools.catalog import grammar
from ci_tools.catalog.model import Kind, Platform

DRAFT = "https://json-schema.org/draft/2020-12/schema"
FILES = {"catalog": "catalog.schema.json", "runners": "runners.schema.json"}

# Free text: no control characters, lone surrogates, bidi overrides or README markers
# (grammar.text_problem); JSON Schema cannot name Unicode categories, so unassigned and
# private-use characters are the loader's alone.
_TEXT = {
    "type": "string",
    "maxLength": grammar.TEXT_MAX_LENGTH,
    "pattern": (
        "^(?!.*(<!--|-->))"
        "[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069\\ud800-\\udfff]*$"
    ),
}


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def rule(r: grammar.Rule, description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "string",
        "pattern": f"^(?:{r.pattern})$",
        "maxLength": r.max_length,
    }
    if description:
        out["description"] = description
    return out


def _strings(item: dict[str, Any], *, min_items: int = 0, unique: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": item}
    if min_items:
        out["minItems"] = min_items
    if unique:
        out["uniqueItems"] = True
    return out


def _object(
    required: dict[str, Any], optional: dict[str, Any] | None = None, description: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
        "additionalProperties": False,
    }
    if description:
        out["description"] = description
    return out


def _table(name_ref: str, value_ref: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "minProperties": 1,
        "propertyNames": {"$ref": f"#/$defs/{name_ref}"},
        "additionalProperties": {"$ref": f"#/$defs/{value_ref}"},
    }


def catalog_schema() -> dict[str, Any]:
    linux = [Platform.X86_64_LINUX.value, Platform.AARCH64_LINUX.value]
    return {
        "$schema": DRAFT,
        "$id": "https://ci-tools.invalid/schema/catalog.schema.json",
        "title": "ci-tools catalog (catalog.yaml)",
        "description": "Every variant this repository builds: packages, CPU ISAs, GPUs, branches.",
        "type": "object",
        "required": ["packages", "isas", "gpus", "branches"],
        "additionalProperties": False,
        "properties": {
            "packages": _table("package_name", "package", "Packages a variant can be."),
            "isas": _table("name", "isa", "CPU instruction sets (DESIGN 2.3)."),
            "gpus": _table("sm", "gpu", "NVIDIA GPU architectures (DESIGN 2.2)."),
            "branches": _table("branch_name", "branch", "One git branch per PyTorch + CUDA."),
        },
        "$defs": {
            "name": rule(grammar.IDENT),
            "package_name": rule(grammar.PACKAGE_NAME),
            "sm": rule(grammar.SM),
            "branch_name": rule(grammar.BRANCH),
            "nix_ident": rule(grammar.NIX_IDENT),
            "version": rule(grammar.VERSION, 'A quoted dotted version: "12.8", not 12.8.'),
            "text": _TEXT,
            "package": _object(
                {"attribute": ref("nix_ident")},
                {"import_name": ref("nix_ident"), "requires": ref("package_name")},
            ),
            "isa": _object(
                {
                    "platform": {"enum": linux},
                    "description": ref("text"),
                    "level": {"type": "integer", "minimum": 0, "maximum": 100},
                    "compiler_flags": _strings(rule(grammar.COMPILER_FLAG), min_items=1),
                    "cpuinfo": _strings(rule(grammar.CPUINFO_FLAG), min_items=1),
                    "torch_capability": rule(grammar.TORCH_CAPABILITY),
                },
                {
                    "disables": _strings(rule(grammar.FEATURE)),
                    "workload": rule(grammar.WORKLOAD),
                    "hardware": ref("text"),
                },
            ),
            "gpu": _object(
                {
                    "capability": rule(grammar.CAPABILITY),
                    "family": ref("text"),
                    "hardware": _strings(ref("text")),
                },
                {
                    "min_cuda": ref("version"),
                    "max_cuda": ref("version"),
                    "isas": _strings(ref("name")),
                    "cudnn": {"type": "boolean"},
                },
            ),
            # A branch states one CUDA toolkit directly (cuda, cuda_packages, min_driver,
            # allow_broken) or several under `toolkits`; never both.
            "branch": {
                **_object(
                    {
                        "versions": {
                            "type": "object",
                            "additionalProperties": ref("version"),
                        },
                        "python": _strings(rule(grammar.PYTHON), min_items=1, unique=True),
                        "nixpkgs": ref("nixpkgs"),
                        "variants": {
                            "type": "object",
                            "minProperties": 1,
                            "additionalProperties": ref("variant_set"),
                        },
                    },
                    {
                        "cuda": ref("version"),
                        "cuda_packages": rule(grammar.CUDA_PACKAGES),
                        "min_driver": ref("min_driver"),
                        "allow_broken": {"type": "boolean"},
                        "toolkits": {
                            "type": "object",
                            "minProperties": 1,
                            "propertyNames": rule(grammar.TOOLKIT),
                            "additionalProperties": ref("toolkit"),
                        },
                        "overlays": ref("overlays"),
                        "sources": {
                            "type": "object",
                            "propertyNames": ref("package_name"),
                            "additionalProperties": _object(
                                {"version": ref("version"), "hash": rule(grammar.SRI_SHA256)}
                            ),
                        },
                    },
                ),
                "oneOf": [
                    {
                        "required": ["toolkits"],
                        "not": {
                            "anyOf": [
                                {"required": [key]}
                                for key in ("cuda", "cuda_packages", "min_driver", "allow_broken")
                            ]
                        },
                    },
                    {
                        "required": ["cuda", "cuda_packages", "min_driver"],
                        "not": {"required": ["toolkits"]},
                    },
                ],
            },
            "toolkit": _object(
                {
                    "cuda": ref("version"),
                    "cuda_packages": rule(grammar.CUDA_PACKAGES),
                    "min_driver": ref("min_driver"),
                },
                {
                    "nixpkgs": ref("nixpkgs"),
                    "allow_broken": {"type": "boolean"},
                    "overlays": ref("overlays"),
                },
            ),
            "nixpkgs": _object(
                {"rev": rule(grammar.NIXPKGS_REV)}, {"sha256": rule(grammar.NIX_SHA256)}
            ),
            "min_driver": {"type": "integer", "minimum": 0, "maximum": 9999},
            "overlays": _strings(rule(grammar.OVERLAY), unique=True),
            "variant_set": _object(
                {},
                {
                    "cpu": _strings(ref("name")),
                    # SM -> ISAs; on a branch with toolkits, toolkit -> SM -> ISAs.
                    "gpu": {
                        "type": "object",
                        "additionalProperties": {
                            "anyOf": [
                                _strings(ref("name")),
                                {"type": "object", "additionalProperties": _strings(ref("name"))},
                            ]
                        },
                    },
                    "darwin_mps": {"type": "boolean"},
                },
            ),
        },
    }


def runners_schema() -> dict[str, Any]:
    minutes = {"type": "integer", "minimum": 1, "maximum": 5 * 24 * 60}
    timeouts = {
        "oneOf": [
            minutes,
            {
                "type": "object",
                "properties": {kind.value: minutes for kind in Kind},
                "additionalProperties": False,
            },
        ]
    }
    return {
        "$schema": DRAFT,
        "$id": "https://ci-tools.invalid/schema/runners.schema.json",
        "title": "ci-tools runner inventory (runners.yaml)",
        "type": "object",
        "required": ["builders"],
        "additionalProperties": False,
        "properties": {
            "builders": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"enum": [p.value for p in Platform]},
                "additionalProperties": ref("pool"),
            },
            "test_runners": {"type": ["array", "null"], "items": ref("test_runner")},
            "preflight": _object(
                {},
                {
                    "flox": rule(grammar.VERSION),
                    "min_free_gb": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
                },
                "What .github/scripts/preflight.py requires of a self-hosted runner.",
            ),
        },
        "$defs": {
            "labels": _strings(rule(grammar.RUNNER_LABEL), min_items=1),
            "cpu_flags": _strings(rule(grammar.CPUINFO_FLAG)),
            "timeout_minutes": timeouts,
            "pool": _object(
                {"labels": ref("labels")},
                {"timeout_minutes": ref("timeout_minutes"), "cpu_flags": ref("cpu_flags")},
            ),
            "test_runner": _object(
                {
                    "labels": ref("labels"),
                    "platform": {"enum": [p.value for p in Platform]},
                    "sm": rule(grammar.SM),
                    "cpu_flags": ref("cpu_flags"),
                },
                {"timeout_minutes": ref("timeout_minutes")},
            ),
        },
    }


BUILDERS = {"catalog": catalog_schema, "runners": runners_schema}


def text(name: str) -> str:
    return json.dumps(BUILDERS[name](), indent=2, ensure_ascii=True) + "\n"


def shipped(name: str) -> str:
    return resources.files(__package__).joinpath(FILES[name]).read_text(encoding="utf-8")


def main() -> None:
    folder = Path(__file__).parent
    for name, file in FILES.items():
        (folder / file).write_text(text(name), encoding="utf-8")


if __name__ == "__main__":
    main()
