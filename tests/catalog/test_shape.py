"""ci_tools.catalog.shape: each kind of value refuses what it must, and the walker reports
every problem at its line, all at once."""

from __future__ import annotations

from typing import Any

import pytest

from ci_tools.catalog import grammar
from ci_tools.catalog.scalars import Bool, Enum, Int, Text, Version
from ci_tools.catalog.shape import Either, Field, ListOf, MapOf, Record, Shape, Table
from ci_tools.catalog.yamlsrc import Node, Problems, parse_yaml


def _check(shape: Shape, yaml: str, what: str = "x") -> tuple[Any, list[str]]:
    """Check the value of `v:` in `yaml` against `shape`: (result, problems as text)."""
    problems = Problems()
    root = parse_yaml(yaml, "f.yaml")
    result = shape.check(root.child("v"), what, problems)
    return result, sorted(str(p) for p in problems.items)


def _document(table: Table, yaml: str) -> tuple[Record | None, list[str]]:
    problems = Problems()
    record = table.check_document(parse_yaml(yaml, "f.yaml"), problems)
    return record, sorted(str(p) for p in problems.items)


# --- scalars ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("v: [a]\n", "f.yaml:1: x must be a string, got a list"),
        ("v: true\n", "f.yaml:1: x must be a string, got true"),
        ("v:\n", "f.yaml:1: x must be a string, got nothing"),
        ("v: 12\n", 'f.yaml:1: x must be a string (quote it: "12"), got the number 12'),
        ("v: 3.10\n", 'f.yaml:1: x must be a string (quote it: "3.10"), got the number 3.10'),
        (
            'v: "Avx2"\n',
            'f.yaml:1: x "Avx2" is not a name (expected [a-z][a-z0-9_]*, e.g. avx512bf16)',
        ),
    ],
)
def test_text_refuses_what_is_no_string_of_its_rule(yaml: str, message: str) -> None:
    assert _check(Text(grammar.IDENT), yaml) == (None, [message])


def test_text_accepts_its_rule_and_prose_refuses_control_characters() -> None:
    assert _check(Text(grammar.IDENT), "v: avx2\n") == ("avx2", [])
    assert _check(Text(), 'v: "A\\u0007B"\n')[1] == [
        # Quoted input is shown escaped: it cannot start a line or move the cursor.
        'f.yaml:1: x "A\\x07B" holds the control or unassigned character U+0007'
    ]
    assert _check(Text(), "v: Hopper (2022)\n") == ("Hopper (2022)", [])


def test_a_hint_replaces_the_rule_s_words() -> None:
    assert _check(Text(grammar.SM, hint='must look like "sm90"'), 'v: "90"\n')[1] == [
        'f.yaml:1: x "90" must look like "sm90"'
    ]


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("v: 12.10\n", 'x must be a quoted string such as "12.10": YAML reads an unquoted 3.10'),
        ("v: 12\n", 'x must be a quoted string such as "12", got the number 12'),
        ("v: twelve\n", 'x "twelve" is not a dotted version'),
        ("v: [12]\n", "x must be a string, got a list"),
    ],
)
def test_version_refuses_numbers_and_what_is_no_version(yaml: str, message: str) -> None:
    result, problems = _check(Version(), yaml)
    assert result is None and len(problems) == 1 and problems[0].startswith(f"f.yaml:1: {message}")


def test_version_accepts_a_quoted_version() -> None:
    assert _check(Version(), 'v: "12.10"\n') == ("12.10", [])
    assert _check(Version(grammar.PYTHON), 'v: "3.13"\n') == ("3.13", [])


@pytest.mark.parametrize(
    ("yaml", "got"),
    [
        ("v: 0\n", "the number 0"),
        ("v: 101\n", "the number 101"),
        ("v: true\n", "true"),
        ("v: 1.0\n", "the number 1.0"),
        ('v: "5"\n', 'the string "5"'),
        ("v: {}\n", "a mapping"),
    ],
)
def test_int_refuses_what_is_no_whole_number_in_its_range(yaml: str, got: str) -> None:
    shape = Int(1, 100, " of minutes", " (why)")
    assert _check(shape, yaml) == (
        None,
        [f"f.yaml:1: x must be a whole number of minutes from 1 to 100 (why), got {got}"],
    )
    assert _check(shape, "v: 100\n") == (100, [])


@pytest.mark.parametrize("yaml", ["v: yes\n", "v: 1\n", 'v: "true"\n', "v:\n"])
def test_bool_is_true_or_false_only(yaml: str) -> None:
    result, problems = _check(Bool(), yaml)
    assert result is None and problems[0].startswith("f.yaml:1: x must be true or false, got ")
    assert _check(Bool(), "v: false\n") == (False, [])


def test_enum_offers_the_closest_word() -> None:
    shape = Enum(("x86_64-linux", "aarch64-linux"))
    assert _check(shape, "v: x86_64-linx\n")[1] == [
        'f.yaml:1: x "x86_64-linx" is unknown (did you mean "x86_64-linux"?); '
        "known: x86_64-linux, aarch64-linux"
    ]
    assert _check(shape, "v: 5\n")[1] == [
        "f.yaml:1: x must be one of x86_64-linux, aarch64-linux, got the number 5"
    ]
    assert _check(shape, "v: aarch64-linux\n") == ("aarch64-linux", [])


# --- lists and mappings ----------------------------------------------------------------------


def test_list_returns_good_items_with_their_lines_and_reports_the_others() -> None:
    shape = ListOf(Text(grammar.IDENT), unique=True)
    result, problems = _check(shape, "v:\n  - a\n  - B\n  - a\n  - c\n")
    assert result == (("a", 2), ("c", 5))
    assert problems == [
        'f.yaml:3: x: "B" is not a name (expected [a-z][a-z0-9_]*, e.g. avx512bf16)',
        'f.yaml:4: x lists "a" twice',
    ]


def test_list_refuses_other_kinds_and_emptiness() -> None:
    assert _check(ListOf(Text()), "v: a\n")[1] == ['f.yaml:1: x must be a list, got the string "a"']
    assert _check(ListOf(Text(), non_empty=True), "v: []\n")[1] == ["f.yaml:1: x must not be empty"]
    assert _check(ListOf(Text()), "v: []\n") == ((), [])


def test_a_list_of_tables_names_items_by_index() -> None:
    shape = ListOf(Table(fields=(Field("a", Int(0, 9), "A.", True),)))
    assert _check(shape, "v:\n  - {a: 1}\n  - {b: 2}\n", "runners")[1] == [
        'f.yaml:3: runners[1] is missing the required key "a"',
        'f.yaml:3: unknown key "b" in runners[1]; allowed: a',
    ]


def test_map_checks_names_and_values_and_words_what_it_maps() -> None:
    shape = MapOf(Enum(("gpu", "cpu")), Int(0, 9), "kinds to numbers", "kind", noun="kind")
    result, problems = _check(shape, "v:\n  gpu: 1\n  gpux: 2\n  cpu: 10\n")
    assert isinstance(result, Record) and dict(result.items()) == {"gpu": 1}
    assert not result.ok
    assert problems == [
        'f.yaml:3: x: kind "gpux" is unknown (did you mean "gpu"?); known: gpu, cpu',
        "f.yaml:4: x.cpu must be a whole number from 0 to 9, got the number 10",
    ]
    assert _check(shape, "v: [gpu]\n")[1] == ["f.yaml:1: x must map kinds to numbers, got a list"]


def test_a_map_that_must_not_be_empty_says_so() -> None:
    shape = MapOf(Text(grammar.IDENT), Int(0, 9), "names to numbers", "name", non_empty=True)
    assert _check(shape, "v: {}\n")[1] == [
        "f.yaml:1: x must map names to numbers, got an empty mapping"
    ]


ENTRY = Table(label="ISA", fields=(Field("level", Int(0, 9), "L.", True),))


def test_entries_named_alone_and_placed_at_their_key() -> None:
    shape = MapOf(Text(grammar.IDENT), ENTRY, "names to ISAs", "isa", alone=True)
    _, problems = _check(shape, "v:\n  avx:\n    levle: 1\n  avx2:\n    level: 99\n")
    # The misspelt key is reported with the right spelling, not also as missing.
    assert problems == [
        'f.yaml:3: unknown key "levle" in ISA avx (did you mean "level"?); allowed: level',
        "f.yaml:5: avx2.level must be a whole number from 0 to 9, got the number 99",
    ]
    _, missing = _check(shape, "v:\n  avx:\n    other: 1\n")
    assert 'f.yaml:2: ISA avx is missing the required key "level"' in missing


# --- tables ----------------------------------------------------------------------------------

TABLE = Table(
    label="the file",
    fields=(
        Field("name", Text(grammar.IDENT), "N.", True),
        Field("flag", Bool(), "F.", default=True),
        Field("items", ListOf(Text()), "I.", default=(), nullable=True),
    ),
)


def test_a_table_fills_defaults_and_reports_everything_at_once() -> None:
    record, problems = _document(TABLE, "name: a\nitems:\n")
    assert problems == [] and record is not None and record.ok
    assert (record["name"], record["flag"], record["items"]) == ("a", True, ())
    assert (record.key_line("items"), record.value_line("name")) == (2, 1)
    record, problems = _document(TABLE, "flag: 3\nextra: 1\n")
    assert record is not None and not record.ok
    assert problems == [
        "f.yaml:1: flag must be true or false, got the number 3",
        'f.yaml:1: the file is missing the required key "name"',
        'f.yaml:2: unknown key "extra" in the file; allowed: flag, items, name',
    ]


def test_a_table_reports_unknown_keys_with_the_closest_and_the_allowed() -> None:
    _, problems = _document(TABLE, "nmae: b\nextra: 1\n")
    assert problems == [
        'f.yaml:1: unknown key "nmae" in the file (did you mean "name"?); allowed: flag, items, name',
        'f.yaml:2: unknown key "extra" in the file; allowed: flag, items, name',
    ]


def test_an_empty_document_says_what_it_needs() -> None:
    assert _document(TABLE, "") == (None, ["f.yaml:1: the file is empty; it needs name"])
    assert _document(TABLE, "- a\n")[1] == ["f.yaml:1: the file must be a mapping, got a list"]


def test_either_picks_a_table_by_its_marker_else_the_other() -> None:
    several = Table(name="several", marker="parts", fields=(Field("parts", Int(0, 9), "P.", True),))
    one = Table(name="one", fields=(Field("part", Int(0, 9), "P.", True),))
    shape = Either(several, one)
    first, _ = _check(shape, "v: {parts: 1}\n")
    second, _ = _check(shape, "v: {part: 1}\n")
    assert first.table is several and second.table is one
    _, problems = _check(shape, "v: {parts: 1, part: 2}\n")
    assert problems == ['f.yaml:1: unknown key "part" in x (did you mean "parts"?); allowed: parts']
    timeouts = Either(Table(fields=(Field("gpu", Int(1, 9), "G.", default=5),)), Int(1, 9))
    assert _check(timeouts, "v: 3\n") == (3, [])
    assert _check(timeouts, "v: {}\n")[0]["gpu"] == 5
    assert _check(timeouts, "v: [1]\n")[1] == [
        "f.yaml:1: x must be a whole number from 1 to 9, got a list"
    ]


def test_a_value_shared_by_aliases_is_checked_once() -> None:
    shape = MapOf(Text(grammar.SM), ListOf(Text(grammar.IDENT)), "SMs to ISAs", "sm")
    result, problems = _check(
        shape, "v:\n  sm80: &isas [avx2, Bad]\n  sm86: *isas\n  sm89: *isas\n"
    )
    assert problems == [
        'f.yaml:2: x.sm80: "Bad" is not a name (expected [a-z][a-z0-9_]*, e.g. avx512bf16)'
    ]
    assert result["sm86"] is result["sm80"] == (("avx2", 2),)


def test_a_record_keeps_its_node() -> None:
    record, _ = _document(TABLE, "name: a\n")
    assert record is not None
    assert isinstance(record.node, Node) and record.written() == ["name"] and record.line == 1
