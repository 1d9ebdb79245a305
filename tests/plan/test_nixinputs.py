"""Nix files compared as Nix (the real `nix-instantiate --parse`), and raw without it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci_tools.base import proc
from ci_tools.base.proc import CommandResult
from ci_tools.plan import nixcanon, nixinputs
from ci_tools.plan.checkout import folder_index
from ci_tools.plan.nixcanon import Canon, canonical, canonical_line
from ci_tools.plan.nixinputs import NixReader, resolve
from tests.conftest import REPO_ROOT

needs_nix = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None, reason="nix-instantiate is not installed"
)

RECIPE = b"""# a recipe
{ pkgs ? import <nixpkgs> {} }:
let
  helper = import ./lib/helper.nix;
  patches = [ ../../nix/patches/fix.patch ];
  script = ''
    # not a comment: string content
    export A=1
  '';
  note = "./not-a-path";
in helper { inherit script patches; dir = ./sub; each = ./gen/${"x"}.nix; }
"""
PATH = ".flox/pkgs/r.nix"


def digest(reader: NixReader, text: bytes, path: str = PATH) -> str:
    return reader.read({path: text})[path].digest


@needs_nix
def test_comments_and_layout_are_no_change_but_string_content_is() -> None:
    reader = NixReader()
    base = digest(reader, RECIPE)
    assert digest(NixReader(), RECIPE.replace(b"# a recipe", b"# another comment\n\n")) == base
    assert digest(NixReader(), RECIPE.replace(b"let\n", b"let   /* c */\n")) == base
    hashed = RECIPE.replace(b"    # not a comment", b"    # NOT a comment")
    assert digest(NixReader(), hashed) != base
    blank = RECIPE.replace(b"    export A=1\n", b"    export A=1\n\n")
    assert digest(NixReader(), blank) != base


@needs_nix
def test_references_are_every_path_literal_resolved_from_the_file() -> None:
    (facts,) = NixReader().read({PATH: RECIPE}).values()
    assert facts.parsed and facts.error is None
    assert facts.references == (
        ".flox/pkgs/gen/",  # an interpolated path: its whole folder
        ".flox/pkgs/lib/helper.nix",
        ".flox/pkgs/sub",
        "nix/patches/fix.patch",
    )


@needs_nix
def test_a_literal_out_of_the_repository_reads_alike_wherever_it_is_parsed() -> None:
    """Such a path printed with the random temporary folder in it: its file's digest changed
    at every run, so its stacks never matched a green record."""
    text = b"{ }: [ ../../../outside.nix ./.. ../../.. ]"
    first = NixReader().read({"nix/sub/f.nix": text})["nix/sub/f.nix"]
    again = NixReader().read({"nix/sub/f.nix": text})["nix/sub/f.nix"]
    assert first.parsed and first.digest == again.digest
    assert first.references == ("nix",)  # `./..`; the others lie outside


@needs_nix
def test_binding_order_is_no_change_and_batches_print_alike() -> None:
    one = b"{ b, a }: let y = 2; x = 1; in { q = x; p = y; }\n"
    two = b"{ a, b }: let x = 1; y = 2; in { p = y; q = x; }\n"
    assert digest(NixReader(), one) == digest(NixReader(), two)
    assert digest(NixReader(), one) != digest(NixReader(), two.replace(b"p = y", b"p = x"))
    # Nix 2.8 prints bindings in symbol-table order: a batch must still print each file as
    # it prints alone. The shipped builders are the case that showed it.
    lib = {
        p.relative_to(REPO_ROOT).as_posix(): p.read_bytes()
        for p in sorted((REPO_ROOT / ".flox/pkgs/lib").glob("*.nix"))
    }
    together = NixReader().read(lib)
    for path, data in lib.items():
        assert NixReader().read({path: data})[path] == together[path], path


def test_canonical_sorts_inside_strings_interpolations_only_as_code() -> None:
    assert canonical('{ b = "x; a"; a = 1; }') == '{ a = 1; b = "x; a"; }'
    assert canonical("({ y, x ? 1, ... }: x)") == "({ x ? 1, y, ... }: x)"
    assert canonical('(let b = "${(let d = 1; c = 2; in c)}"; a = 1; in a)') == (
        '(let a = 1; b = "${(let c = 2; d = 1; in c)}"; in a)'
    )


def test_lines_of_one_template_are_sorted_once_and_each_as_canonical_sorts_it() -> None:
    """A template's lines differ in their strings: sorted once by their shape, strings put
    back; where the order depends on what a string holds, sorted as they are."""
    nixcanon._SHAPES.clear()
    one = '{ z = "1"; a = { y = "-mavx2"; x = [ "b" ]; }; q = /r/x.nix; }'
    two = '{ z = "2"; a = { y = "-mavx512f"; x = [ "c" ]; }; q = /r/x.nix; }'
    for line in (one, two):
        canon = Canon(line)
        assert canonical_line(line) == (canon.run(), canon.paths)
    assert len(nixcanon._SHAPES) == 1
    # Attribute names that are strings: their placeholders would sort by position.
    named = '{ "b" = 1; "a" = 2; c = "y"; }'
    assert canonical_line(named)[0] == canonical(named) == '{ "a" = 2; "b" = 1; c = "y"; }'
    assert canonical_line('{ "a" = 2; "b" = 1; c = "z"; }')[0] == '{ "a" = 2; "b" = 1; c = "z"; }'
    # Interpolations and escaped quotes.
    for line in ('{ b = "x${(let d = 1; c = 2; in c)}"; a = "\\"; }', '{ b = "\\" "; a = 1; }'):
        assert canonical_line(line)[0] == canonical(line)


@needs_nix
def test_a_file_nix_refuses_is_compared_raw_with_its_error() -> None:
    (facts,) = NixReader().read({PATH: b"{ x: import ./y.nix"}).values()
    assert facts.digest.startswith("raw:")
    assert facts.error is not None and "syntax error" in facts.error
    assert facts.references == (".flox/pkgs/y.nix",)


def test_without_nix_every_byte_counts() -> None:
    reader = NixReader(use_nix=False)
    assert reader.mode == "raw-bytes"
    base = digest(reader, RECIPE)
    assert digest(NixReader(use_nix=False), RECIPE.replace(b"# a recipe", b"# edited")) != base
    (facts,) = NixReader(use_nix=False).read({PATH: RECIPE}).values()
    assert not facts.parsed
    # More references than the parse (the string "./not-a-path" too), never fewer.
    assert set(facts.references) >= {
        ".flox/pkgs/lib/helper.nix",
        "nix/patches/fix.patch",
        ".flox/pkgs/sub",
        ".flox/pkgs/gen/",
    }


@needs_nix
def test_parsed_and_raw_never_compare_equal() -> None:
    assert digest(NixReader(), RECIPE) != digest(NixReader(use_nix=False), RECIPE)


def test_resolve_files_folders_and_nothing() -> None:
    files = {"a/x.nix": "1", "a/sub/default.nix": "2", "a/sub/p.patch": "3"}
    folders = folder_index(files)
    assert resolve("a/x.nix", files, folders) == ["a/x.nix"]
    assert sorted(resolve("a/sub", files, folders) or []) == ["a/sub/default.nix", "a/sub/p.patch"]
    assert sorted(resolve("a/", files, folders) or []) == sorted(files)
    assert resolve("a/gone.nix", files, folders) is None


@needs_nix
def test_batches_cost_one_parser_call(tmp_path: object) -> None:
    reader = NixReader()
    files = {f".flox/pkgs/p{i}.nix": b"{ }: %d\n" % i for i in range(50)}
    reader.read(files)
    assert reader.parser_calls == 1
    reader.read(files)  # cached by (path, content)
    assert reader.parser_calls == 1


@needs_nix
def test_two_commits_parse_in_one_call_each_as_it_parses_alone() -> None:
    """`read_many`: two versions of one path (HEAD's and REF's) in one call, each read as
    a reader of its commit alone reads it, its references resolved in its own tree."""
    head = {PATH: RECIPE, "nix/a.nix": b"{ }: import ./b.nix\n"}
    ref = {PATH: RECIPE.replace(b"./lib/helper.nix", b"./lib/old.nix"), "nix/a.nix": b"1\n"}
    reader = NixReader()
    both = reader.read_many([head, ref])
    assert reader.parser_calls == 1
    assert both == [NixReader().read(head), NixReader().read(ref)]
    assert ".flox/pkgs/lib/old.nix" in both[1][PATH].references
    assert both[0]["nix/a.nix"].references == ("nix/b.nix",)
    reader.read(ref)  # cached by (path, content)
    assert reader.parser_calls == 1


@needs_nix
def test_a_refused_file_costs_one_parser_call_more_not_one_a_file() -> None:
    reader = NixReader()
    files = {f".flox/pkgs/p{i:02}.nix": b"{ }: %d\n" % i for i in range(50)}
    files[".flox/pkgs/p20.nix"] = b"{ x = ; }\n"
    read = reader.read(files)
    assert reader.parser_calls == 2
    assert read[".flox/pkgs/p20.nix"].error is not None
    assert "syntax error" in (read[".flox/pkgs/p20.nix"].error or "")
    assert [p for p, f in read.items() if not f.parsed] == [".flox/pkgs/p20.nix"]
    assert (
        read[".flox/pkgs/p21.nix"].digest
        == NixReader().read({"a.nix": b"{ }: 21\n"})["a.nix"].digest
    )


class FakeNix:
    """`nix-instantiate --parse` as far as the reader sees it: one line a file, in order,
    stopping at the first file holding BAD; `names`: whether its error names that file."""

    def __init__(self, *, names: bool) -> None:
        self.names = names
        self.calls = 0

    def __call__(self, argv: list[str], *, cwd: Path, timeout: float) -> CommandResult:
        self.calls += 1
        lines: list[str] = []
        for path in argv[argv.index("--") + 1 :]:
            if b"BAD" in (cwd / path).read_bytes():
                where = f"{cwd}/{path}:1:1" if self.names else "somewhere"
                stdout = "".join(f"{line}\n" for line in lines)
                return _result(argv, 1, stdout, f"error: bad\nat {where}")
            lines.append(f"{{ n = {len(lines)}; }}")
        return _result(argv, 0, "".join(f"{x}\n" for x in lines), "")


def _result(argv: list[str], returncode: int, stdout: str, stderr: str) -> CommandResult:
    return CommandResult(
        argv=tuple(argv), returncode=returncode, stdout=stdout, stderr=stderr, seconds=0.0
    )


@pytest.mark.parametrize(("names", "most"), [(True, 2), (False, 17)])
def test_parser_calls_with_one_refused_file(
    monkeypatch: pytest.MonkeyPatch, names: bool, most: int
) -> None:
    """Nix names the refused file: one call more; an error that names none: halves, about
    two calls a halving, never one a file (237 files, one refused)."""
    fake = FakeNix(names=names)
    monkeypatch.setattr(proc, "which", lambda tool: "/fake/" + tool)
    monkeypatch.setattr(proc, "run", fake)
    files = {f".flox/pkgs/p{i:03}.nix": b"{ }: %d\n" % i for i in range(237)}
    files[".flox/pkgs/p100.nix"] = b"BAD\n"
    reader = NixReader()
    read = reader.read(files)
    assert reader.parser_calls == fake.calls <= most
    assert [p for p, f in read.items() if not f.parsed] == [".flox/pkgs/p100.nix"]
    assert read[".flox/pkgs/p100.nix"].error == "error: bad"
    reader.read(files)  # cached by (path, content)
    assert reader.parser_calls == fake.calls <= most


@needs_nix
def test_without_an_in_memory_folder_the_files_go_to_the_default_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(nixinputs, "_MEMORY", tmp_path / "no-such-folder")
    (facts,) = NixReader().read({PATH: RECIPE}).values()
    assert facts.parsed and facts.digest == digest(NixReader(), RECIPE)
