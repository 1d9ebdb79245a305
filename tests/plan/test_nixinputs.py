"""Nix files compared as Nix (the real `nix-instantiate --parse`), and raw without it."""

from __future__ import annotations

import shutil

import pytest

from ci_tools.plan.checkout import folder_index
from ci_tools.plan.nixinputs import NixReader, canonical, resolve
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
