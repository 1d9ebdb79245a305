"""The key reference (docs/reference.md): every key of catalog.yaml, runners.yaml and ci-tools.yaml, from
their declarations (`ci_tools/catalog/tables.py`, `settings.py`), with whether it is required, what its value may
be, its default and what it is for. `ci-tools generate` keeps the block current.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from ci_tools.catalog import grammar, layout, settings, tables
from ci_tools.catalog.scalars import Bool, Enum, Int, Text, Version
from ci_tools.catalog.shape import Either, Field, ListOf, MapOf, Shape, Table

BLOCK = "keys"
FILES = (
    (layout.CATALOG, tables.CATALOG),
    (layout.RUNNERS, tables.RUNNERS),
    (layout.SETTINGS, settings.SETTINGS),
)


@dataclass(frozen=True, kw_only=True)
class Row:
    key: str
    need: str  # "required", "optional", and which form of its table it belongs to
    value: str
    default: str
    doc: str


def reference() -> str:
    """The block's Markdown, below its BEGIN marker."""
    out = [
        f"<!-- {layout.GENERATED_MARKER} from its declaration of {layout.CATALOG}, "
        f"{layout.RUNNERS} (ci_tools/catalog/tables.py) and {layout.SETTINGS} "
        "(ci_tools/catalog/settings.py). Do not edit: run `ci-tools generate` -->"
    ]
    for file, table in FILES:
        out += ["", f"### `{file}`", "", "| Key | | Value | Default | What it is |"]
        out.append("|---|---|---|---|---|")
        out += [_markdown(row) for row in _unique(rows(table, ""))]
    return "\n".join(out) + "\n"


def _markdown(row: Row) -> str:
    cells = (f"`{row.key}`", row.need, row.value, row.default, row.doc)
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _unique(found: Iterator[Row]) -> list[Row]:
    """Rows in order, each once (the forms of a branch share most of their keys)."""
    return list(dict.fromkeys(found))


def rows(table: Table, prefix: str) -> Iterator[Row]:
    for field in table.fields:
        key = f"{prefix}{field.key}"
        yield Row(
            key=key,
            need="required" if field.required else "optional",
            value=describe(field.shape),
            default=_default(field),
            doc=field.doc,
        )
        yield from _inside(field.shape, key)


def _inside(shape: Shape, key: str) -> Iterator[Row]:
    """The rows of what a value holds: a table's keys, a mapping's entries, a list's items."""
    if isinstance(shape, Table):
        yield from rows(shape, f"{key}.")
    elif isinstance(shape, Either) and isinstance(shape.second, Table):
        yield from _forms(shape, key)
    elif isinstance(shape, Either):
        yield from _inside(shape.first, key)
    elif isinstance(shape, MapOf):
        yield from _inside(shape.value, f"{key}.<{shape.placeholder}>")
    elif isinstance(shape, ListOf):
        yield from _inside(shape.item, f"{key}[]")


def _forms(either: Either, key: str) -> Iterator[Row]:
    """Two forms of one table (a branch with one toolkit or with `toolkits`): the keys both
    have once, the others marked with their form's `doc`."""
    assert isinstance(either.first, Table) and isinstance(either.second, Table)
    default, other = list(rows(either.second, f"{key}.")), list(rows(either.first, f"{key}."))
    for row in default:
        yield row if row in other else replace(row, need=f"{row.need} {either.second.doc}")
    for row in other:
        if row not in default:
            yield replace(row, need=f"{row.need} {either.first.doc}")


def describe(shape: Shape) -> str:
    """What a value may be, in words and patterns."""
    if isinstance(shape, Version):
        assert shape.rule is not None
        return f"quoted {_rule(shape.rule)}"
    if isinstance(shape, Text):
        if shape.rule is None:
            return f"text, at most {grammar.TEXT_MAX_LENGTH} characters"
        return _rule(shape.rule)
    if isinstance(shape, Int):
        return f"whole number from {shape.low} to {shape.high}"
    if isinstance(shape, Bool):
        return "`true` or `false`"
    if isinstance(shape, Enum):
        return "one of " + ", ".join(f"`{value}`" for value in shape.values)
    if isinstance(shape, ListOf):
        return _list(shape)
    if isinstance(shape, MapOf):
        return _map(shape)
    if isinstance(shape, Table):
        return "mapping"
    if isinstance(shape, Either):
        return f"{describe(shape.second)}, or {describe(shape.first)}"
    raise TypeError(f"cannot describe {type(shape).__name__}")


def _map(shape: MapOf) -> str:
    """A mapping's words; a value that is no table is said here, innermost first."""
    out = f"mapping of {shape.what}" + (", at least one" if shape.non_empty else "")
    out += f"; `<{shape.placeholder}>`: {describe(shape.key)}"
    leaf = shape.value
    while isinstance(leaf, MapOf):
        leaf = leaf.value
    if not isinstance(leaf, Table | Either):
        out += f"; each {describe(leaf)}"
    return out


def _list(shape: ListOf) -> str:
    what = "mappings" if isinstance(shape.item, Table) else describe(shape.item)
    extra = (", at least one" if shape.non_empty else "") + (", each once" if shape.unique else "")
    return f"list of {what}{extra}"


def _rule(rule: grammar.Rule) -> str:
    return f"{rule.name} `{rule.pattern}`"


def _default(field: Field) -> str:
    if field.default_doc:
        return field.default_doc
    value = field.default
    if field.required or value is None:
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value in ((), ""):
        return "none"
    return f"`{value}`"
