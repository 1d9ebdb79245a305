"""ci_tools.catalog.yamlsrc: YAML 1.2 values with their lines, read through libyaml, and
what it refuses while reading."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from ci_tools.base.errors import SourceError
from ci_tools.catalog.yamlsrc import MAX_DEPTH, MAX_NODES, Node, load_yaml, parse_yaml, plain_scalar


def _refused(text: str) -> list[str]:
    with pytest.raises(SourceError) as info:
        parse_yaml(text, "f.yaml")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3.10", 3.1),
        ("12", 12),
        ("-7", -7),
        ("0o17", 15),
        ("0x1F", 31),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("true", True),
        ("False", False),
        ("null", None),
        ("~", None),
        ("", None),
        # YAML 1.1 booleans, octals and sexagesimals are strings in 1.2.
        ("no", "no"),
        ("yes", "yes"),
        ("on", "on"),
        ("017", 17),
        ("1:30", "1:30"),
        ("1_000", "1_000"),
        ("2024-01-01", "2024-01-01"),
        ("sm90", "sm90"),
    ],
)
def test_plain_scalars_follow_the_core_schema(text: str, value: object) -> None:
    got = plain_scalar(text)
    assert (
        got == value
        and isinstance(got, type(value))
        and isinstance(value, bool) == isinstance(got, bool)
    )


def test_special_floats_and_the_spelling_of_a_float() -> None:
    assert math.isinf(plain_scalar(".inf")) and plain_scalar("-.Inf") < 0
    assert math.isnan(plain_scalar(".NaN"))
    assert getattr(plain_scalar("3.10"), "text", None) == "3.10"


def test_quoted_and_block_scalars_stay_strings() -> None:
    node = parse_yaml("a: '3.10'\nb: \"no\"\nc: |\n  12\n", "f.yaml")
    assert dict(node.value) == {"a": "3.10", "b": "no", "c": "12\n"}


def test_lines_of_keys_values_and_items() -> None:
    node = parse_yaml("top:\n  list:\n    - a\n    - b\n  flow: [c, d]\nother: 1\n", "f.yaml")
    assert (node.key_line("top"), node.value_line("top"), node.key_line("other")) == (1, 2, 6)
    top = node.child("top")
    assert (top.key_line("list"), top.value_line("list")) == (2, 3)
    assert [item.line for _, item in top.child("list").elements()] == [3, 4]
    assert [item.line for _, item in top.child("flow").elements()] == [5, 5]
    # A key that is not there: the mapping's own line.
    assert top.key_line("nope") == top.line
    assert Node("plain", "f.yaml", 7).key_line("x") == 7


def test_an_alias_is_its_anchor_s_value() -> None:
    node = parse_yaml("a: &x [1, 2]\nb: *x\n", "f.yaml")
    assert node.value["a"] is node.value["b"]
    assert node.child("b").value.item_lines == [1, 1]


def test_an_alias_bomb_stays_small() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 9)}]\n" for n in range(8)
    )
    assert len(parse_yaml(bomb, "f.yaml").value) == 9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: 2\na: 3\n", 'f.yaml:3: malformed YAML: duplicate key "a" (first on line 1)'),
        (
            "a: &x 1\nb: &x 2\n",
            "f.yaml:2: malformed YAML: found duplicate anchor (first defined on line 1)",
        ),
        ("a: *nothing\n", "f.yaml:1: malformed YAML: found undefined alias"),
        ("a: 1\nb: !!str 2\n", 'f.yaml:2: explicit YAML tag "!!str" is not allowed'),
        ("a: !foo {x: 1}\n", 'f.yaml:1: explicit YAML tag "!foo" is not allowed'),
        (
            "? [a]\n: b\n",
            "f.yaml:1: malformed YAML: a key must be a single value, not a list or mapping",
        ),
        ("a: b\n---\nc: d\n", "f.yaml:2: malformed YAML: but found another document"),
        ("a: [\n", "f.yaml:2: malformed YAML: did not find expected node content"),
        (
            "a: 1\nb: \x07\n",
            "f.yaml:2: malformed YAML: unacceptable character U+0007: control characters are not allowed",
        ),
        ("a: 1\nb: " + "9" * 101 + "\n", "f.yaml:2: a number longer than 100 digits"),
        ("a: " + "[" * 70 + "]" * 70 + "\n", "f.yaml:1: nested deeper than 32 levels"),
        (
            "a: 1\n# note\u2028\n",
            "f.yaml:2: holds U+2028, which YAML 1.1 reads as a line break and YAML 1.2 as a character: remove it",
        ),
        (
            "a: 1\nb: c\x85d\n",
            "f.yaml:2: holds U+0085, which YAML 1.1 reads as a line break and YAML 1.2 as a character: remove it",
        ),
    ],
)
def test_what_is_refused_while_reading(text: str, message: str) -> None:
    assert _refused(text) == [message]


def test_deep_nesting_within_the_estimate_is_still_refused_exactly() -> None:
    text = "a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    assert _refused(text) == [f"f.yaml:1: nested deeper than {MAX_DEPTH} levels"]
    assert parse_yaml("a: " + "[" * 20 + "]" * 20 + "\n", "f.yaml").value is not None


def test_a_recursive_alias_is_refused_as_too_deep() -> None:
    assert _refused("a: &a [*a]\n") == [f"f.yaml:1: nested deeper than {MAX_DEPTH} levels"]


def test_a_surrogate_escape_says_what_is_wrong() -> None:
    (problem,) = _refused('a: 1\nb: "Hopper \\ud83d"\n')
    assert problem.startswith("f.yaml:2: malformed YAML: found invalid Unicode character escape")
    assert "lone surrogate" in problem and "write the character itself" in problem


def test_a_lone_surrogate_in_text_that_is_no_file() -> None:
    assert _refused("a: 1\nb: x\ud83d\n") == [
        "f.yaml:2: malformed YAML: holds a lone surrogate (U+D83D)"
    ]


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    from ci_tools.catalog.yamlsrc import load_yaml

    with pytest.raises(SourceError, match=r"x\.yaml:1: file not found"):
        load_yaml(tmp_path / "x.yaml", "x.yaml")
    with pytest.raises(SourceError, match="not a regular file"):
        load_yaml(tmp_path, "dir.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"a: \xe9\n")
    with pytest.raises(SourceError, match="cannot read"):
        load_yaml(tmp_path / "latin1.yaml", "latin1.yaml")
    (tmp_path / "empty.yaml").write_text("# only a comment\n", encoding="utf-8")
    assert load_yaml(tmp_path / "empty.yaml").value is None


# --- issue 20 item 4: sizes cost bounded time -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a: [" + ",".join(["1"] * 400_000) + "]\n",
        "a: {" + ",".join(f"k{i}: 1" for i in range(200_000)) + "}\n",
        "a:\n" + "- x\n" * 900_000,
    ],
    ids=["flow-list", "flow-mapping", "block-list"],
)
def test_a_document_of_too_many_values_is_refused_naming_its_line(text: str) -> None:
    (problem,) = _refused(text)
    assert problem.endswith(f"holds more than {MAX_NODES} values")
    assert problem.startswith("f.yaml:")


def test_a_huge_line_parses() -> None:
    parsed = parse_yaml("a: 1\n#" + "x" * 800_000 + "\nb: " + "y" * 800_000 + "\n", "f.yaml")
    assert parsed.value["a"] == 1 and len(parsed.value["b"]) == 800_000


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_catalog_that_is_no_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "catalog.yaml"
    if kind == "device":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    with pytest.raises(SourceError, match=r"catalog\.yaml:1: not a regular file"):
        load_yaml(path, "catalog.yaml")
