"""The shape of a YAML input file, declared once: keys, kinds of value, rules, defaults.

`ci_tools/catalog/tables.py` declares `catalog.yaml` and `runners.yaml` with these kinds. From
a declaration come the loaders' structural checks (`check`, here: unknown and missing keys
with a suggestion, wrong kinds, values against their `grammar` rule, every problem at its
file:line and all at once), the JSON Schemas (`ci_tools/catalog/schema/`) and the key
reference (`ci_tools/render/keys.py`). What relates one table to another (an SM against its
toolkit's CUDA, `requires`, duplicates, overlay files) is the loaders' own code.

Here the tables, mappings and lists; `scalars.py` the kinds of single value. A check returns
the checked value: a `Record` for a mapping, a tuple of `(value, line)` for a list, the plain
value for a scalar; None where the value is wrong (the problem is reported).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ci_tools.catalog.yamlsrc import Node, Problems, did_you_mean, kind_of, suggestion

if TYPE_CHECKING:
    from ci_tools.catalog.scalars import Enum, Text

Items = tuple[tuple[Any, int], ...]

# The shapes below are frozen dataclasses without generated __eq__ and __repr__: a
# declaration is one object, compared by identity, and every generated method is compiled at
# each start of `ci-tools matrix`.


class Record:
    """A checked mapping: each key's checked value (or its default), and its YAML lines.

    `ok` is False when anything inside it was reported; `table` is the table it was checked
    against (which of an `Either`), None for a `MapOf`."""

    __slots__ = ("node", "ok", "table", "values")

    def __init__(
        self, node: Node, values: dict[str, Any], ok: bool, table: Table | None = None
    ) -> None:
        self.node = node
        self.values = values
        self.ok = ok
        self.table = table

    @property
    def line(self) -> int:
        return self.node.line

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def items(self) -> Iterator[tuple[str, Any]]:
        yield from self.values.items()

    def written(self) -> list[str]:
        """Every key the file has, its value right or wrong."""
        return [str(key) for key in self.node.value]

    def key_line(self, key: str) -> int:
        return self.node.key_line(key)

    def value_line(self, key: str) -> int:
        return self.node.value_line(key)


class Shape:
    """One kind of value. `check` reports what is wrong with `node` as `what` (the value's
    path in messages) and returns the checked value, or None."""

    def check(self, node: Node, what: str, problems: Problems) -> Any:
        raise NotImplementedError

    def fits(self, node: Node) -> bool:
        """Whether `Either` should check `node` against this shape."""
        return True

    def at_key(self) -> bool:
        """Whether an entry of this shape in a `MapOf` is placed at its key's line: a table
        is ("ISA avx" at `avx:`), any other value at the line of the value."""
        return False

    def within(self) -> tuple[Shape, ...]:
        """The shapes of the values this one holds."""
        return ()


def tables_in(shape: Shape) -> Iterator[Table]:
    """Every table a declaration holds, itself included, in order."""
    if isinstance(shape, Table):
        yield shape
    for inner in shape.within():
        yield from tables_in(inner)


class _Shared(Shape):
    """A shape of lists or mappings. An alias (`*six_isas`) shares its anchor's value, which is
    checked once: one mistake, one message, however often the value is used."""

    def check(self, node: Node, what: str, problems: Problems) -> Any:
        if not isinstance(node.value, dict | list):
            return self._check(node, what, problems)
        key = (id(self), id(node.value))
        if key not in problems.shared:
            problems.shared[key] = self._check(node, what, problems)
        return problems.shared[key]

    def _check(self, node: Node, what: str, problems: Problems) -> Any:
        raise NotImplementedError


def shown(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True, eq=False, repr=False)
class ListOf(_Shared):
    """A list; `unique`: no value twice; returns each good item with its line."""

    item: Shape
    non_empty: bool = False
    unique: bool = False

    def within(self) -> tuple[Shape, ...]:
        return (self.item,)

    def _check(self, node: Node, what: str, problems: Problems) -> Items | None:
        if not node.is_list():
            problems.add(node.file, node.line, f"{what} must be a list, got {kind_of(node.value)}")
            return None
        if self.non_empty and not node.value:
            problems.add(node.file, node.line, f"{what} must not be empty")
            return None
        out: list[tuple[Any, int]] = []
        seen: set[Any] = set()
        for index, item in node.elements():
            path = f"{what}[{index}]" if isinstance(self.item, Table) else f"{what}:"
            value = self.item.check(item, path, problems)
            if value is None:
                continue
            if self.unique and value in seen:
                problems.add(node.file, item.line, f'{what} lists "{value}" twice')
                continue
            seen.add(value)
            out.append((value, item.line))
        return tuple(out)


@dataclass(frozen=True, eq=False, repr=False)
class MapOf(_Shared):
    """A mapping from names (each checked by `key`) to values.

    `what` words the message for anything else ("platforms to pools"); `noun` names a key in
    messages ("platform"); `placeholder` stands for a key in the README ("<platform>").
    `alone`: an entry's path is its name (`avx.level`, not `isas.avx.level`)."""

    key: Text | Enum
    value: Shape
    what: str
    placeholder: str
    non_empty: bool = False
    noun: str = ""
    alone: bool = False

    def within(self) -> tuple[Shape, ...]:
        return (self.value,)

    def _check(self, node: Node, what: str, problems: Problems) -> Record | None:
        if not node.is_mapping() or (self.non_empty and not node.value):
            got = "an empty mapping" if node.value == {} else kind_of(node.value)
            problems.add(node.file, node.line, f"{what} must map {self.what}, got {got}")
            return None
        before = len(problems.items)
        values: dict[str, Any] = {}
        for key in node.value:
            name = str(key)
            line = node.key_line(key) if self.value.at_key() else node.value_line(key)
            entry = Node(node.value[key], node.file, line)
            why = self.key.problem(name)
            if why is not None:
                noun = f"{self.noun} " if self.noun else ""
                problems.add(entry.file, entry.line, f'{what}: {noun}"{shown(name)}" {why}')
                continue
            checked = self.value.check(entry, name if self.alone else f"{what}.{name}", problems)
            if checked is not None:
                values[name] = checked
        return Record(node, values, len(problems.items) == before)


@dataclass(frozen=True, eq=False, repr=False)
class Field:
    """One key of a table: its shape, whether it must be there, its default, what it is for.

    `default` is the value an absent key has; `default_doc` says it in the README where code
    works it out (`import_name`: the attribute). `nullable`: `key:` with no value is absent.
    `when_missing(mapping, path)` adds to the message for a required key that is absent: how to
    get its value, from the rest of the mapping (the hash of a source at its version)."""

    key: str
    shape: Shape
    doc: str
    required: bool = False
    default: Any = None
    default_doc: str = ""
    nullable: bool = False
    when_missing: Callable[[dict[Any, Any], str], str] | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Table(_Shared):
    """A mapping with fixed keys. `label` names it in messages ("ISA" -> "ISA avx"); `marker`
    is the key that picks this table in an `Either`; `name` is its JSON Schema definition."""

    fields: tuple[Field, ...]
    label: str = ""
    marker: str = ""
    name: str = ""
    doc: str = ""

    def at_key(self) -> bool:
        return True

    def within(self) -> tuple[Shape, ...]:
        return tuple(field.shape for field in self.fields)

    def fits(self, node: Node) -> bool:
        return node.is_mapping() and (not self.marker or self.marker in node.value)

    def _check(self, node: Node, what: str, problems: Problems) -> Record | None:
        label = f"{self.label} {what}".strip() if self.label else what
        if not node.is_mapping():
            problems.add(
                node.file, node.line, f"{label} must be a mapping, got {kind_of(node.value)}"
            )
            return None
        before = len(problems.items)
        misspelt = self._unknown_keys(node, label, problems)
        values: dict[str, Any] = {}
        for spec in self.fields:
            present = spec.key in node.value and not (
                spec.nullable and node.value[spec.key] is None
            )
            values[spec.key] = spec.default
            if present:
                path = f"{what}.{spec.key}" if what else spec.key
                values[spec.key] = spec.shape.check(node.child(spec.key), path, problems)
            elif spec.required and spec.key not in misspelt and spec.key not in node.value:
                hint = spec.when_missing(node.value, what) if spec.when_missing else ""
                problems.add(
                    node.file,
                    node.line,
                    f'{label} is missing the required key "{spec.key}"{hint}',
                )
        return Record(node, values, len(problems.items) == before, self)

    def _unknown_keys(self, node: Node, label: str, problems: Problems) -> set[str]:
        """Report keys the table does not have; returns the keys they look like misspelt."""
        allowed = [f.key for f in self.fields]
        misspelt: set[str] = set()
        for key in node.value:
            name = str(key)
            if name in allowed:
                continue
            close = suggestion(name, allowed)
            if close is not None:
                misspelt.add(close)
            problems.add(
                node.file,
                node.key_line(key),
                f'unknown key "{shown(name)}" in {label}{did_you_mean(name, allowed)}; '
                f"allowed: {', '.join(sorted(allowed))}",
            )
        return misspelt

    def check_document(self, root: Node, problems: Problems) -> Record | None:
        """The whole file: an empty one says what it needs."""
        if root.value is None:
            needs = ", ".join(f.key for f in self.fields if f.required)
            problems.add(root.file, 1, f"{self.label} is empty; it needs {needs}")
            return None
        record: Record | None = self.check(root, "", problems)
        return record


@dataclass(frozen=True, eq=False, repr=False)
class Either(Shape):
    """`first` where it fits the value (a table by its `marker`, a number by not being a
    mapping), else `second`: a branch with several toolkits or one, a timeout or several."""

    first: Shape
    second: Shape

    def at_key(self) -> bool:
        return self.first.at_key()

    def within(self) -> tuple[Shape, ...]:
        return (self.first, self.second)

    def check(self, node: Node, what: str, problems: Problems) -> Any:
        chosen = self.first if self.first.fits(node) else self.second
        return chosen.check(node, what, problems)
