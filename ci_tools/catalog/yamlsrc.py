"""Reading YAML input files so that every problem can name its file and line.

The catalog and the runner inventory are read with ruamel.yaml's round-trip loader, which
keeps the line of every key and list item. `Node` wraps a loaded mapping or list with its
file so that validators can say `catalog.yaml:42: ...` without passing positions around.
"""

from __future__ import annotations

import difflib
import re
import stat
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ci_tools.base.errors import Problem, SourceError
from ci_tools.catalog import grammar
from ci_tools.catalog.grammar import Rule


@dataclass
class Problems:
    """Collects problems so that one run reports all of them, not just the first."""

    items: list[Problem] = field(default_factory=list)

    def add(self, file: str, line: int, message: str) -> None:
        self.items.append(Problem(file, line, message))

    def raise_if_any(self) -> None:
        if self.items:
            raise SourceError(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)


def _suggestion(word: str, choices: list[str] | tuple[str, ...] | set[str]) -> str | None:
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: list[str] | tuple[str, ...] | set[str]) -> str:
    suggestion = _suggestion(word, choices)
    return f' (did you mean "{suggestion}"?)' if suggestion else ""


def closest(word: str, choices: list[str] | tuple[str, ...] | set[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(word, sorted(choices), n=n, cutoff=0.5)


@dataclass(frozen=True)
class Node:
    """A loaded YAML value together with where it came from."""

    value: Any
    file: str
    line: int

    # ruamel's CommentedMap/CommentedSeq carry `.lc`, 0-based; plain scalars do not, and a
    # value built in code has no position: each falls back to the enclosing line.
    def _position(self, kind: str, where: str | int) -> int | None:
        lc = getattr(self.value, "lc", None)
        try:
            return int(getattr(lc, kind)(where)[0]) + 1
        except (AttributeError, KeyError, TypeError, IndexError):
            return None

    def key_line(self, key: str) -> int:
        return self._position("key", key) or self.line

    def value_line(self, key: str) -> int:
        return self._position("value", key) or self.key_line(key)

    def item_line(self, index: int) -> int:
        return self._position("item", index) or self.line

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
# parser recurse out of stack (ruamel's composer recurses per level) or Python refuse an int.
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
MAX_DIGITS = 100


def load_yaml(path: Path, display_name: str | None = None) -> Node:
    """Load one YAML file; a syntax error becomes a SourceError naming file:line."""
    name = display_name or str(path)
    try:
        # Only a regular file: a FIFO or a device would block the read, or never end.
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise SourceError([Problem(name, 1, "not a regular file (a folder, FIFO or device)")])
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SourceError([Problem(name, 1, f"larger than {MAX_FILE_BYTES} bytes")])
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError([Problem(name, 1, "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError([Problem(name, 1, f"cannot read: {exc}")]) from None
    return parse_yaml(text, name)


def parse_yaml(text: str, name: str) -> Node:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError, YAMLWarning

    _check_text(text, name)
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        # ruamel only warns about some mistakes (an anchor defined twice): errors here.
        with warnings.catch_warnings():
            warnings.simplefilter("error", YAMLWarning)
            data = yaml.load(text)
    except YAMLWarning as exc:
        line = _warning_line(exc)
        reason = " ".join(str(exc).split())[:200]
        raise SourceError([Problem(name, line, f"malformed YAML: {reason}")]) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        reason = (exc.problem or exc.context or "malformed YAML").strip()
        raise SourceError([Problem(name, line, f"malformed YAML: {reason}")]) from None
    except YAMLError as exc:
        raise SourceError([Problem(name, 1, f"malformed YAML: {exc}")]) from None
    except RecursionError:
        raise SourceError(
            [Problem(name, _deepest_line(text), f"nested deeper than {MAX_DEPTH} levels")]
        ) from None
    except ValueError as exc:  # e.g. an int Python refuses to convert
        raise SourceError([Problem(name, 1, f"malformed YAML: {exc}")]) from None
    _check_depth(data, name)
    return Node(data, name, 1)


def _warning_line(exc: Exception) -> int:
    """The line a ruamel warning points at (its last mark: the second anchor), or 1."""
    marks = [getattr(exc, k, None) for k in ("problem_mark", "context_mark")]
    lines = [m.line + 1 for m in marks if m is not None and hasattr(m, "line")]
    found = re.findall(r"line (\d+), column", str(exc))
    return lines[-1] if lines else (int(found[-1]) if found else 1)


_LONG_NUMBER = re.compile(rf"[0-9][0-9_]{{{MAX_DIGITS},}}")


def _check_text(text: str, name: str) -> None:
    """Refuse, before parsing, what the parser would choke on: huge numbers, deep nesting."""
    if len(text) > MAX_FILE_BYTES:
        raise SourceError([Problem(name, 1, f"larger than {MAX_FILE_BYTES} bytes")])
    for number, content in enumerate(text.splitlines(), start=1):
        if _LONG_NUMBER.search(content):
            raise SourceError([Problem(name, number, f"a number longer than {MAX_DIGITS} digits")])
    deep = _deepest_line(text)
    if deep:
        raise SourceError([Problem(name, deep, f"nested deeper than {MAX_DEPTH} levels")])


def _deepest_line(text: str) -> int:
    """The first line where flow brackets or indentation nest deeper than MAX_DEPTH, or 0.

    An estimate over the raw text (quotes are not parsed), so it is generous: 2 * MAX_DEPTH
    brackets or 4 * MAX_DEPTH columns of indentation; `_check_depth` is the exact check.
    """
    depth = 0
    for number, line in enumerate(text.splitlines(), start=1):
        for char in line:
            if char in "[{":
                depth += 1
                if depth > 2 * MAX_DEPTH:
                    return number
            elif char in "]}":
                depth = max(0, depth - 1)
        if len(line) - len(line.lstrip(" ")) > 4 * MAX_DEPTH:
            return number
    return 0


def _check_depth(data: object, name: str) -> None:
    """Refuse documents nested deeper than MAX_DEPTH (validators and schemas recurse), and
    explicit tags.

    Aliases share objects, so an alias bomb is a small graph: each object is walked once
    per depth it is reached at, never once per path.
    """
    seen: dict[int, int] = {}
    stack: list[tuple[object, int, int]] = [(data, 1, 1)]
    while stack:
        value, depth, line = stack.pop()
        tag = getattr(getattr(value, "tag", None), "value", None)
        if tag is not None:
            # A tag (`!!python/object`, `!foo`) means nothing here; the safe loaders of
            # editors and the JSON Schema refuse it, and so does this one.
            raise SourceError([Problem(name, line, f'explicit YAML tag "{tag}" is not allowed')])
        if not isinstance(value, dict | list):
            continue
        if seen.get(id(value), 0) >= depth:
            continue
        seen[id(value)] = depth
        if depth > MAX_DEPTH:
            raise SourceError([Problem(name, line, f"nested deeper than {MAX_DEPTH} levels")])
        node = Node(value, name, line)
        if isinstance(value, dict):
            stack.extend((value[key], depth + 1, node.value_line(key)) for key in value)
        else:
            stack.extend((item, depth + 1, node.item_line(i)) for i, item in enumerate(value))


def check_keys(
    node: Node,
    problems: Problems,
    *,
    what: str,
    required: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
) -> bool:
    """Report missing and unknown keys of a mapping. Returns False if `node` is no mapping."""
    if not node.is_mapping():
        problems.add(node.file, node.line, f"{what} must be a mapping, got {_kind(node.value)}")
        return False
    allowed = set(required) | set(optional)
    misspelt: set[str] = set()
    for key, child in node.items():
        if key not in allowed:
            suggestion = _suggestion(key, allowed)
            if suggestion is not None:
                misspelt.add(suggestion)
            problems.add(
                node.file,
                child.line,
                f'unknown key "{key}" in {what}{did_you_mean(key, allowed)}; '
                f"allowed: {', '.join(sorted(allowed))}",
            )
    for key in required:
        # A misspelt required key is already reported, with the right spelling.
        if key not in node.value and key not in misspelt:
            problems.add(node.file, node.line, f'{what} is missing the required key "{key}"')
    return True


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def scalar_str(
    node: Node, problems: Problems, what: str, rule: Rule | None = None, *, strict: bool = False
) -> str | None:
    """A string value checked against its grammar `rule` (free text when None).

    A number is refused, not turned into its spelling: YAML reads 3.10 as 3.1 and 1e3 as
    1000.0, and the JSON Schema (ci_tools/catalog/schema) says `string` too. `strict` only words the
    message for versions.
    """
    value = node.value
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        problems.add(node.file, node.line, f"{what} must be a string, got {_kind(value)}")
        return None
    if not isinstance(value, str) and not strict:
        problems.add(
            node.file,
            node.line,
            f'{what} must be a string (quote it: "{value}"), got {_kind(value)}',
        )
        return None
    if not isinstance(value, str):
        problems.add(
            node.file,
            node.line,
            f'{what} must be a quoted string such as "{value}", got the number {value!r}: '
            "YAML reads an unquoted 3.10 as the number 3.1",
        )
        return None
    text = str(value)
    why = grammar.text_problem(text) if rule is None else rule.problem(text)
    if why is not None:
        problems.add(node.file, node.line, f'{what} "{_shown(text)}" {why}')
        return None
    return text


def _shown(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def string_list(
    node: Node,
    problems: Problems,
    what: str,
    rule: Rule | None = None,
    *,
    strict: bool = False,
    non_empty: bool = False,
) -> list[tuple[str, int]]:
    """A list of strings, each checked against `rule` (free text when None), with its line."""
    if not node.is_list():
        problems.add(node.file, node.line, f"{what} must be a list, got {_kind(node.value)}")
        return []
    if non_empty and not node.value:
        problems.add(node.file, node.line, f"{what} must not be empty")
        return []
    out: list[tuple[str, int]] = []
    for _, item in node.elements():
        text = scalar_str(item, problems, f"{what}:", rule, strict=strict)
        if text is not None:
            out.append((text, item.line))
    return out


def kind_of(value: object) -> str:
    return _kind(value)


def version_str(node: Node, problems: Problems, what: str) -> str | None:
    """A dotted version. YAML reads 12.10 as the float 12.1, so versions must be quoted."""
    if isinstance(node.value, float):
        problems.add(
            node.file,
            node.line,
            f'{what} must be a quoted string such as "{node.value}": '
            "YAML reads an unquoted 12.10 as the number 12.1",
        )
        return None
    return scalar_str(node, problems, what, grammar.VERSION)
