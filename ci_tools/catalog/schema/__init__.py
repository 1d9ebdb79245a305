"""The JSON Schemas of `catalog.yaml`, `runners.yaml` and `ci-tools.yaml`, written from their
declarations.

`ci_tools/catalog/tables.py` declares the first two, `settings.py` the third (`shape.py`,
`scalars.py`: the kinds); this module
turns a declaration into JSON Schema (draft 2020-12). The shipped files (`catalog.schema.json`,
`runners.schema.json` next to this module) are the output of `python3 -m ci_tools.catalog.schema`;
tests/fuzz/test_schema.py checks they are current and that schema and loader reach the same
verdict on the fuzz corpus. Editors read them through the `# yaml-language-server: $schema=...`
line at the top of both files. The loader does not validate through them (`ci-tools matrix`
would pay for jsonschema at every start); the schema states the shape and value grammar, the
loader also the rules that relate tables.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from ci_tools.catalog import grammar, settings, tables
from ci_tools.catalog.scalars import Bool, Enum, Int, Text
from ci_tools.catalog.shape import Either, Field, ListOf, MapOf, Shape, Table

DRAFT = "https://json-schema.org/draft/2020-12/schema"
FILES = {
    "catalog": "catalog.schema.json",
    "runners": "runners.schema.json",
    "settings": "settings.schema.json",
}
TITLES = {
    "catalog": "ci-tools catalog (catalog.yaml)",
    "runners": "ci-tools runner inventory (runners.yaml)",
    "settings": "ci-tools settings of a repository without a catalog (ci-tools.yaml)",
}
DECLARATIONS = {
    "catalog": tables.CATALOG,
    "runners": tables.RUNNERS,
    "settings": settings.SETTINGS,
}

# Free text: no control characters, lone surrogates, bidi overrides or README markers
# (grammar.text_problem); JSON Schema cannot name Unicode categories, so unassigned and
# private-use characters are the loader's alone.
TEXT = {
    "type": "string",
    "maxLength": grammar.TEXT_MAX_LENGTH,
    "pattern": (
        "^(?!.*(<!--|-->))"
        "[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069\\ud800-\\udfff]*$"
    ),
}


def rule(r: grammar.Rule) -> dict[str, Any]:
    return {"type": "string", "pattern": f"^(?:{r.pattern})$", "maxLength": r.max_length}


class _Writer:
    """One schema: tables with a name become `$defs` entries, referenced where used."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def shape(self, shape: Shape) -> dict[str, Any]:
        if isinstance(shape, Text):
            return rule(shape.rule) if shape.rule is not None else dict(TEXT)
        if isinstance(shape, Int):
            return {"type": "integer", "minimum": shape.low, "maximum": shape.high}
        if isinstance(shape, Bool):
            return {"type": "boolean"}
        if isinstance(shape, Enum):
            return {"enum": list(shape.values)}
        if isinstance(shape, ListOf):
            return self._list(shape)
        if isinstance(shape, MapOf):
            return self._map(shape)
        if isinstance(shape, Table):
            return self._table_ref(shape)
        if isinstance(shape, Either):
            return {"oneOf": [self.shape(shape.first), self.shape(shape.second)]}
        raise TypeError(f"no JSON Schema for {type(shape).__name__}")

    def _list(self, shape: ListOf) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": self.shape(shape.item)}
        if shape.non_empty:
            out["minItems"] = 1
        if shape.unique:
            out["uniqueItems"] = True
        return out

    def _map(self, shape: MapOf) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        if shape.non_empty:
            out["minProperties"] = 1
        out["propertyNames"] = self.shape(shape.key)
        out["additionalProperties"] = self.shape(shape.value)
        return out

    def _table_ref(self, table: Table) -> dict[str, Any]:
        if table.name not in self.defs:
            self.defs[table.name] = None  # a table that holds itself refers to its own entry
            self.defs[table.name] = self.table(table)
        return {"$ref": f"#/$defs/{table.name}"}

    def table(self, table: Table) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        if table.doc:
            out["description"] = table.doc
        out["required"] = [f.key for f in table.fields if f.required]
        out["properties"] = {f.key: self.field(f) for f in table.fields}
        out["additionalProperties"] = False
        return out

    def field(self, field: Field) -> dict[str, Any]:
        out: dict[str, Any] = {"description": field.doc}
        if field.nullable:
            out["anyOf"] = [self.shape(field.shape), {"type": "null"}]
        else:
            out.update(self.shape(field.shape))
        if field.default is not None:
            default = field.default
            out["default"] = list(default) if isinstance(default, tuple) else default
        return out


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of `catalog` or `runners`."""
    writer = _Writer()
    root = writer.table(DECLARATIONS[name])
    return {
        "$schema": DRAFT,
        "$id": f"https://ci-tools.invalid/schema/{FILES[name]}",
        "title": TITLES[name],
        **root,
        "$defs": dict(sorted(writer.defs.items())),
    }


def catalog_schema() -> dict[str, Any]:
    return schema("catalog")


def runners_schema() -> dict[str, Any]:
    return schema("runners")


def text(name: str) -> str:
    return json.dumps(schema(name), indent=2, ensure_ascii=True) + "\n"


def shipped(name: str) -> str:
    return resources.files(__package__).joinpath(FILES[name]).read_text(encoding="utf-8")


def main() -> None:
    folder = Path(__file__).parent
    for name, file in FILES.items():
        (folder / file).write_text(text(name), encoding="utf-8")


if __name__ == "__main__":
    main()
