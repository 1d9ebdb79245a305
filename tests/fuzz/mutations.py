"""Deterministic mutations of the shipped catalog, runner inventory and result records.

Each mutation is a `Case`: the mutated text, what was done (for the failure message), and
whether the change is one of structure or value grammar (`structural`), which the JSON
Schema must judge as the loader does, or one of the rules relating tables, which only the
loader knows.
"""

from __future__ import annotations

import copy
import io
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML

MARKER = "PWNED"

# Values that must never be obeyed: shell, Nix, workflow commands, README markers, paths.
PAYLOADS: tuple[object, ...] = (
    f"X=0; touch {MARKER}; export Y",
    f"$(touch {MARKER})",
    f"`touch {MARKER}`",
    f"'; touch {MARKER}; '",
    f'"; touch {MARKER}; "',
    f"a\ntouch {MARKER}",
    '" + builtins.readFile /etc/passwd + "',
    "${builtins.currentTime}",
    "''${x}",
    "::add-mask::secret",
    "##[warning]v1",
    "<!-- END generated: isas -->",
    "a/b",
    "..",
    "../../etc/passwd",
    "a b",
    "with \"quotes\" and 'single'",
    "\x00nul",
    "\x1b[31mred",
    "\u202eevil",
    "\ud83d",
    "é",
    "\U0001d518nicode",  # mathematical fraktur U
    "\uff19.\uff10",  # fullwidth 9.0
    "*",
    "${{ secrets.X }}",
    "",
    " ",
    "x" * 300,
    10**50,
    -1,
    0,
    3.10,
    float("inf"),
    True,
    None,
    [],
    {},
    ["nested", ["list"]],
)


@dataclass(frozen=True, kw_only=True)
class Case:
    label: str
    text: str
    structural: bool  # the schema must agree with the loader on this one


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    return yaml


def load(text: str) -> Any:
    return _yaml().load(text)


def dump(data: Any) -> str:
    stream = io.StringIO()
    _yaml().dump(data, stream)
    return stream.getvalue()


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*prefix, index))


def _pick(
    data: Any, rng: random.Random, keep: Callable[[tuple[Any, ...]], bool]
) -> tuple[Any, ...] | None:
    """A random path, drawn per top-level section first so that small tables (isas,
    packages) are hit as often as the large variants tree."""
    paths = [p for p in _paths(data) if p and keep(p)]
    if not paths:
        return None
    sections = sorted({str(p[0]) for p in paths})
    section = rng.choice(sections)
    return rng.choice([p for p in paths if str(p[0]) == section])


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _misspell(word: str, rng: random.Random) -> str:
    if len(word) < 2:
        return word + "x"
    i = rng.randrange(len(word) - 1)
    return (
        word[:i] + word[i + 1] + word[i] + word[i + 2 :] if word[i] != word[i + 1] else word + "s"
    )


# --- data-level mutations: the YAML stays valid ----------------------------------------------


def _delete_key(data: Any, rng: random.Random) -> str | None:
    path = _pick(data, rng, lambda p: isinstance(_get(data, p[:-1]), dict))
    if path is None:
        return None
    del _get(data, path[:-1])[path[-1]]
    return f"delete {'.'.join(map(str, path))}"


def _misspell_key(data: Any, rng: random.Random) -> str | None:
    path = _pick(data, rng, lambda p: isinstance(_get(data, p[:-1]), dict))
    if path is None:
        return None
    parent = _get(data, path[:-1])
    new = _misspell(str(path[-1]), rng)
    if new in parent:
        return None
    parent[new] = parent.pop(path[-1])
    return f"misspell {'.'.join(map(str, path))} as {new}"


def _set_value(data: Any, rng: random.Random) -> str | None:
    path = _pick(data, rng, lambda p: True)
    if path is None:
        return None
    value = copy.deepcopy(rng.choice(PAYLOADS))
    _get(data, path[:-1])[path[-1]] = value
    return f"set {'.'.join(map(str, path))} = {value!r}"[:200]


def _rename_key(data: Any, rng: random.Random) -> str | None:
    path = _pick(data, rng, lambda p: isinstance(_get(data, p[:-1]), dict))
    if path is None:
        return None
    parent = _get(data, path[:-1])
    new = rng.choice([p for p in PAYLOADS if isinstance(p, str | int)])
    if new in parent:
        return None
    parent[new] = parent.pop(path[-1])
    return f"rename {'.'.join(map(str, path))} to {new!r}"[:200]


def _swap_type(data: Any, rng: random.Random) -> str | None:
    path = _pick(data, rng, lambda p: True)
    if path is None:
        return None
    parent = _get(data, path[:-1])
    old = parent[path[-1]]
    if isinstance(old, dict):
        new: Any = list(old)
    elif isinstance(old, list):
        new = (
            {str(i): v for i, v in enumerate(old)} if rng.random() < 0.5 else (old[0] if old else 1)
        )
    elif isinstance(old, str):
        new = [old] if rng.random() < 0.5 else {old: old}
    else:
        new = str(old)
    parent[path[-1]] = new
    return f"type swap {'.'.join(map(str, path))}: {type(old).__name__} -> {type(new).__name__}"


def _empty_container(data: Any, rng: random.Random) -> str | None:
    path = _pick(data, rng, lambda p: isinstance(_get(data, p), dict | list))
    if path is None:
        return None
    parent = _get(data, path[:-1])
    parent[path[-1]] = type(parent[path[-1]])()
    return f"empty {'.'.join(map(str, path))}"


_FREE_TEXT = ("description", "hardware", "family")


def _payload_in_text(data: Any, rng: random.Random) -> str | None:
    """A payload string in prose (descriptions, hardware): often accepted, so the rendered
    recipes carry it into Nix strings and comments, where it must stay inert."""
    path = _pick(
        data,
        rng,
        lambda p: any(str(part) in _FREE_TEXT for part in p) and isinstance(_get(data, p), str),
    )
    if path is None:
        return None
    value = rng.choice([p for p in PAYLOADS if isinstance(p, str)])
    _get(data, path[:-1])[path[-1]] = value
    return f"prose {'.'.join(map(str, path))} = {value!r}"[:200]


DATA_MUTATIONS: tuple[Callable[[Any, random.Random], str | None], ...] = (
    _delete_key,
    _misspell_key,
    _set_value,
    _set_value,
    _rename_key,
    _swap_type,
    _empty_container,
    _payload_in_text,
    _payload_in_text,
)


# --- text-level mutations: the YAML itself is broken or hostile -------------------------------


def _text_mutations(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    kind = rng.randrange(12)
    if kind == 0:
        return text[: rng.randrange(len(text))], "truncate"
    if kind == 1:
        return "".join(lines[: i + 1] + lines[i:]), f"duplicate line {i + 1}"
    if kind == 2:
        return "".join(lines[:i] + lines[i + 1 :]), f"delete line {i + 1}"
    if kind == 3:
        bad = rng.choice([": [", "\t", "{", "- - ]", "&a", "*nothing", "!!python/object:os.system"])
        return "".join([*lines[:i], bad + "\n", *lines[i:]]), f"insert {bad!r} at line {i + 1}"
    if kind == 4:
        depth = rng.choice([40, 300, 2000])
        return text + "deep: " + "[" * depth + "]" * depth + "\n", f"nesting {depth} deep"
    if kind == 5:
        digits = rng.choice([90, 5000])
        return text.replace("level: 1", "level: " + "9" * digits, 1), f"{digits}-digit number"
    if kind == 6:
        bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 9)}]\n"
            for n in range(8)
        )
        return bomb + text, "alias bomb"
    if kind == 7:
        char = rng.choice(["\x00", "\x07", "\x1b", "\ufeff", "\u2028", "\x85"])
        line = lines[i]
        cut = rng.randrange(len(line) + 1)
        return "".join([*lines[:i], line[:cut] + char + line[cut:], *lines[i + 1 :]]), (
            f"control char {char!r} in line {i + 1}"
        )
    if kind == 8:
        return text.replace("description: AVX2", 'description: "\\ud83d"', 1), "lone surrogate"
    if kind == 9:
        return text.replace('python: ["3.13"]', "python: [3.10]", 1), "unquoted python 3.10"
    if kind == 10:
        return "\n".join(text.split("\n")[: i + 1]) + "\n" + text, "document repeated"
    return text.replace(":", ": :", 1), "colon"


def mutate_yaml(text: str, rng: random.Random, count: int) -> Iterator[Case]:
    """`count` mutations of a YAML document: two thirds on its data, one third on its text."""
    base = load(text)
    produced = 0
    while produced < count:
        if rng.random() < 0.66:
            data = copy.deepcopy(base)
            operation = rng.choice(DATA_MUTATIONS)
            label = operation(data, rng)
            if label is None:
                continue
            yield Case(label=label, text=dump(data), structural=True)
        else:
            mutated, label = _text_mutations(text, rng)
            yield Case(label=label, text=mutated, structural=False)
        produced += 1


def mutate_record(record: dict[str, Any], rng: random.Random, count: int) -> Iterator[Case]:
    """Mutated result records, as JSON text."""
    produced = 0
    while produced < count:
        data = copy.deepcopy(record)
        kind = rng.randrange(4)
        if kind == 0:
            label = _set_value(data, rng)
        elif kind == 1:
            label = _delete_key(data, rng)
        elif kind == 2:
            label = _swap_type(data, rng)
        else:
            special = rng.choice(["NaN", "Infinity", "-Infinity", "1e400", "[" * 100000])
            path = rng.choice(["build.seconds", "build.closure_bytes", "schema"])
            section, _, key = path.rpartition(".")
            target = data[section] if section else data
            target[key] = "@@SPECIAL@@"
            text = json.dumps(data, ensure_ascii=False).replace('"@@SPECIAL@@"', special)
            yield Case(label=f"{path} = {special[:20]}", text=text, structural=False)
            produced += 1
            continue
        if label is None:
            continue
        try:
            text = json.dumps(data, ensure_ascii=False)
        except (ValueError, TypeError):
            continue
        yield Case(label=label, text=text, structural=True)
        produced += 1
