"""Reading YAML input files so that every problem can name its file and line.

libyaml (ruamel.yaml's C parser, `ruamel.yaml.clib`) composes the document into nodes with
marks; the values are built here from those nodes, under YAML 1.2's core schema: `3.10` is a
float, `no` a string, and only `true`/`false` are booleans. Each mapping and list keeps the
line of every key, value and item, so that `Node` can say `catalog.yaml:42: ...`. Refused
while reading: duplicate keys, an anchor defined twice, explicit tags, numbers over
MAX_DIGITS digits, nesting deeper than MAX_DEPTH, more than MAX_NODES values, and keys that
are lists or mappings.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tools.base import bounded
from ci_tools.base.errors import CiToolsError, SourceError
from ci_tools.catalog.yamltext import check_text

if TYPE_CHECKING:
    from ci_tools.base.problem import Problem


@dataclass
class Problems:
    """Collects problems so that one run reports all of them, not just the first.

    `shared`: what `shape` made of each list or mapping, which aliases share (one check each).
    """

    items: list[Problem] = field(default_factory=list)
    shared: dict[tuple[int, int], Any] = field(default_factory=dict)

    def add(self, file: str, line: int, message: str) -> None:
        from ci_tools.base.problem import Problem  # here: only bad input creates one

        self.items.append(Problem(file, line, message))

    def raise_if_any(self) -> None:
        if self.items:
            raise SourceError(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)


def suggestion(word: str, choices: list[str] | tuple[str, ...] | set[str]) -> str | None:
    import difflib  # only when there is a name to suggest: most runs never do

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: list[str] | tuple[str, ...] | set[str]) -> str:
    suggestion_ = suggestion(word, choices)
    return f' (did you mean "{suggestion_}"?)' if suggestion_ else ""


def closest(word: str, choices: list[str] | tuple[str, ...] | set[str], n: int = 3) -> list[str]:
    import difflib

    return difflib.get_close_matches(word, sorted(choices), n=n, cutoff=0.5)


def kind_of(value: object) -> str:
    """How a message names what it found instead: "a list", "the number 5", "nothing"."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return f"the number {getattr(value, 'text', value)}"
    text = str(value)
    return f'the string "{text if len(text) <= 60 else text[:60] + "..."}"'


class Mapping(dict[Any, Any]):
    """A YAML mapping with the 1-based lines of the mapping, its keys and its values."""

    __slots__ = ("key_lines", "line", "value_lines")

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int] = {}
        self.value_lines: dict[Any, int] = {}


class Sequence(list[Any]):
    """A YAML list with the 1-based lines of the list and of each item."""

    __slots__ = ("item_lines", "line")

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []


class Float(float):
    """A float as the file spells it (`3.10`), so a message can quote what was written."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, value: float, text: str) -> Float:
        made = super().__new__(cls, value)
        made.text = text
        return made


@dataclass(frozen=True)
class Node:
    """A loaded YAML value together with where it came from."""

    value: Any
    file: str
    line: int

    def key_line(self, key: str) -> int:
        lines = getattr(self.value, "key_lines", None)
        return lines.get(key, self.line) if lines is not None else self.line

    def value_line(self, key: str) -> int:
        lines = getattr(self.value, "value_lines", None)
        return lines.get(key, self.line) if lines is not None else self.line

    def item_line(self, index: int) -> int:
        lines = getattr(self.value, "item_lines", None)
        return lines[index] if lines is not None and index < len(lines) else self.line

    def child(self, key: str) -> Node:
        return Node(self.value[key], self.file, self.value_line(key))

    def items(self) -> Iterator[tuple[str, Node]]:
        for key in self.value:
            yield str(key), Node(self.value[key], self.file, self.key_line(key))

    def elements(self) -> Iterator[tuple[int, Node]]:
        for index, item in enumerate(self.value):
            yield index, Node(item, self.file, self.item_line(index))

    def is_mapping(self) -> bool:
        return isinstance(self.value, dict)

    def is_list(self) -> bool:
        return isinstance(self.value, list)


# Bounds on what an input file may be: far above any real catalog, far below what makes the
# parser recurse out of stack (libyaml's composer recurses per level) or Python refuse an int.
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
MAX_DIGITS = 100
MAX_NODES = 20_000  # values of all kinds; this repository's catalog holds under 600


def load_yaml(path: Path, display_name: str | None = None) -> Node:
    """Load one YAML file; a syntax error becomes a SourceError naming file:line."""
    name = display_name or str(path)
    try:
        # Only a regular file, and only so much of it (`bounded`): a FIFO or a device would
        # block the read, or never end.
        text = bounded.read_text(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise SourceError.one(name, 1, "file not found") from None
    except bounded.RefusedInput as exc:
        raise SourceError.one(name, 1, str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError.one(name, 1, f"cannot read: {exc}") from None
    return parse_yaml(text, name)


def parse_yaml(text: str, name: str) -> Node:
    check_text(text, name, max_bytes=MAX_FILE_BYTES, max_digits=MAX_DIGITS)
    root = _compose(text, name)
    data = _Builder(name).value(root) if root is not None else None
    _check_depth(data, name)
    return Node(data, name, 1)


def _compose(text: str, name: str) -> Any:
    """libyaml's node graph of the one document in `text` (None when it is empty), after a
    cheap pass over its events refuses nesting deeper than MAX_DEPTH (the composer recurses)
    and more than MAX_NODES values (each node costs Python objects: 4 MB took a minute)."""
    parser = _parser_class()
    with _syntax_errors(text, name):
        depth = nodes = 0
        events = parser(text)
        while (event := events.get_event()) is not None:
            kind = type(event).__name__
            depth += (kind in _OPENS) - (kind in _CLOSES)
            nodes += kind in _OPENS or kind in ("ScalarEvent", "AliasEvent")
            if depth > MAX_DEPTH or nodes > MAX_NODES:
                why = (
                    f"nested deeper than {MAX_DEPTH} levels"
                    if depth > MAX_DEPTH
                    else f"holds more than {MAX_NODES} values"
                )
                raise SourceError.one(name, event.start_mark.line + 1, why)
        return parser(text).get_single_node()


_OPENS = frozenset({"SequenceStartEvent", "MappingStartEvent"})
_CLOSES = frozenset({"SequenceEndEvent", "MappingEndEvent"})


@functools.cache
def _parser_class() -> Any:
    try:
        from ruamel.yaml.cyaml import CParser
        from ruamel.yaml.tag import Tag
    except ImportError:  # a broken install, not bad input
        raise CiToolsError(
            "ruamel.yaml's C parser is not installed: pip install 'ruamel.yaml.clib>=0.2.12'"
        ) from None

    class Parser(CParser):  # type: ignore[misc]
        # libyaml asks for a tag for every untagged node: one that says "implicit". The same
        # Tag object every time: a new one per node would cost more than the node itself.
        plain, implicit = Tag(suffix=_PLAIN), Tag(suffix=_IMPLICIT)

        def resolve(self, kind: type, value: object, implicit: tuple[bool, bool]) -> Any:
            return self.plain if kind.__name__ == "ScalarNode" and implicit[0] else self.implicit

        def descend_resolver(self, *_: object) -> None:
            return None

        def ascend_resolver(self, *_: object) -> None:
            return None

    return Parser


@contextlib.contextmanager
def _syntax_errors(text: str, name: str) -> Iterator[None]:
    """libyaml's errors as SourceErrors naming file:line."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    try:
        yield
    except MarkedYAMLError as exc:
        raise SourceError.one(name, _mark_line(exc), f"malformed YAML: {_reason(exc)}") from None
    except ReaderError as exc:
        line = text.encode("utf-8", "surrogatepass")[: exc.position].count(b"\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        reason = f"unacceptable character U+{code:04X}: {exc.reason}"
        raise SourceError.one(name, line, f"malformed YAML: {reason}") from None
    except UnicodeEncodeError as exc:  # text that is not a file: a lone surrogate
        line = text[: exc.start].count("\n") + 1
        reason = f"holds a lone surrogate (U+{ord(text[exc.start]):04X})"
        raise SourceError.one(name, line, f"malformed YAML: {reason}") from None
    except YAMLError as exc:
        raise SourceError.one(name, 1, f"malformed YAML: {exc}") from None


_PLAIN = "<plain>"  # an untagged plain scalar: its type comes from the core schema
_IMPLICIT = "<implicit>"  # an untagged quoted or block scalar, list or mapping


def _mark_line(exc: Any) -> int:
    mark = exc.problem_mark or exc.context_mark
    return int(mark.line) + 1 if mark is not None else 1


def _reason(exc: Any) -> str:
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    if problem == "second occurrence" and exc.context_mark is not None:
        # libyaml's composer: "found duplicate anchor; first occurrence" ... "second occurrence"
        return f"{context.split(';')[0]} (first defined on line {exc.context_mark.line + 1})"
    if "invalid Unicode character escape" in problem:
        return f"{problem}: a lone surrogate or beyond U+10FFFF; write the character itself"
    return problem or context or "malformed YAML"


# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", re.ASCII)
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?", re.ASCII)
_SPECIAL_FLOAT = re.compile(r"([-+]?)\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", re.ASCII)


def plain_scalar(text: str) -> Any:
    """What an untagged plain scalar means under the core schema."""
    if text in _NULL:
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.fullmatch(text):
        base = {"0o": 8, "0x": 16}.get(text[:2], 10)
        return int(text[2:] if base != 10 else text, base)
    if _FLOAT.fullmatch(text):
        return Float(float(text), text)
    special = _SPECIAL_FLOAT.fullmatch(text)
    if special:
        value = float("nan") if special.group(1) is None else float("inf")
        return Float(-value if special.group(1) == "-" else value, text)
    return text


class _Builder:
    """Values from libyaml's nodes. An alias is the anchored node itself, so each node is
    built once (an alias bomb stays a small graph) and a cycle stays a cycle."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.built: dict[int, Any] = {}

    def _refuse(self, node: Any, message: str) -> SourceError:
        return SourceError.one(self.name, node.start_mark.line + 1, message)

    def value(self, node: Any) -> Any:
        if id(node) in self.built:
            return self.built[id(node)]
        plain = node.ctag is _parser_class().plain
        if not plain and node.ctag is not _parser_class().implicit:
            tag = re.sub(r"^tag:yaml\.org,2002:", "!!", str(node.tag))
            raise self._refuse(node, f'explicit YAML tag "{tag}" is not allowed')
        if isinstance(node.value, str):
            return plain_scalar(node.value) if plain else node.value
        if node.id == "sequence":
            items = self.built[id(node)] = Sequence(node.start_mark.line + 1)
            for item in node.value:
                items.append(self.value(item))
                items.item_lines.append(item.start_mark.line + 1)
            return items
        mapping = self.built[id(node)] = Mapping(node.start_mark.line + 1)
        for key_node, value_node in node.value:
            key = self._key(key_node)
            if key in mapping:
                first = mapping.key_lines[key]
                raise self._refuse(
                    key_node, f'malformed YAML: duplicate key "{key}" (first on line {first})'
                )
            mapping.key_lines[key] = key_node.start_mark.line + 1
            mapping.value_lines[key] = value_node.start_mark.line + 1
            mapping[key] = self.value(value_node)
        return mapping

    def _key(self, node: Any) -> Any:
        if not isinstance(node.value, str):
            raise self._refuse(
                node, "malformed YAML: a key must be a single value, not a list or mapping"
            )
        return self.value(node)


def _check_depth(data: object, name: str) -> None:
    """Refuse documents nested deeper than MAX_DEPTH (the checks and schemas recurse).

    Aliases share objects, so an alias bomb is a small graph: each object is walked once
    per depth it is reached at, never once per path.
    """
    seen: dict[int, int] = {}
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, Mapping | Sequence) or seen.get(id(value), 0) >= depth:
            continue
        seen[id(value)] = depth
        if depth > MAX_DEPTH:
            raise SourceError.one(name, value.line, f"nested deeper than {MAX_DEPTH} levels")
        children = value.values() if isinstance(value, Mapping) else value
        stack.extend((child, depth + 1) for child in children)
