"""References read from raw Nix text: every path, and which of them sit in code."""

from __future__ import annotations

import shutil

import pytest

from ci_tools.plan.nixinputs import NixReader
from ci_tools.plan.nixpaths import broad_references
from ci_tools.plan.nixraw import code_paths, raw_references

PATH = "nix/file.nix"

# Every way a path may sit in text and not be code, next to one that is.
TRICKY = rb"""# ./overlays/NAME.nix in a comment
/* ./block.nix, and a # inside */
{ lib, x }:
let
  a'' = ./quoted-id.nix;  # an identifier may end in ''
  url = https://example.org/a/*b; # a URI may hold /*
  search = <nixpkgs/lib>;
  plain = "./in-string.nix \" ./after-escape.nix";
  escaped = "\${./escaped.nix} $${./dollar.nix}";
  indented = ''
    ./in-indented.nix ''${./escaped-indented.nix} ''' $${./dollar-indented.nix}
    ${./interpolated-indented.nix}
  '';
  nested = "${ "${./nested.nix}" + "./nested-string.nix" }";
  bare = lib/bare.nix;
  folder = ./gen/${x}.nix;
in [ a'' url search plain escaped indented nested bare folder ./last.nix ]
"""
IN_CODE = (
    "nix/lib/bare.nix",
    "nix/gen/",
    "nix/interpolated-indented.nix",
    "nix/last.nix",
    "nix/nested.nix",
    "nix/quoted-id.nix",
)


def test_comments_and_strings_hold_references_but_not_code() -> None:
    found = raw_references(PATH, TRICKY.decode())
    assert found.in_code == tuple(sorted(IN_CODE))
    # More, never fewer: the comments' and strings' paths are inputs all the same.
    assert set(found.every) >= set(IN_CODE) | {
        "nix/overlays/NAME.nix",
        "nix/block.nix",
        "nix/in-string.nix",
        "nix/escaped.nix",
        "nix/in-indented.nix",
        "nix/nested-string.nix",
    }


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="needs nix-instantiate")
def test_the_lexer_finds_what_nix_parses() -> None:
    (parsed,) = NixReader().read({PATH: TRICKY}).values()
    assert parsed.parsed
    assert set(parsed.references) == set(IN_CODE)


@pytest.mark.parametrize(
    "text",
    [
        '{ }: "unterminated ./a.nix',
        "{ }: ''unterminated ./a.nix",
        "{ }: /* unterminated ./a.nix",
        '{ }: "${./a.nix"',
        "{ }: ./a.nix }",
    ],
)
def test_text_that_does_not_lex_leaves_the_references_uncertain(text: str) -> None:
    assert code_paths(text) is None
    found = raw_references(PATH, text)
    assert found.in_code is None
    assert found.every == ("nix/a.nix",)


def test_outside_the_repository_and_the_file_itself_are_no_references() -> None:
    found = raw_references(PATH, "{ }: [ ../../../outside.nix ./file.nix ]")
    assert found.every == found.in_code == ()


# Places a path token may start that a scan from word boundaries alone would miss, next to
# forms the lexer reads as one token (`x+./y`, `1./z`).
EDGES = (
    "{ a'b }: a'b./c.nix",
    "{ x }: x+./y.nix",
    "{ }: 1./z.nix",
    "{ a }: a//./u.nix",
    "{ x }: [ ./gen/${x}.nix ./foo-${x} ./${x} ../up/${x} ]",
    '{ }: "${./s.nix}${ ./t.nix }"',
    "{ }: [ ./. ./.. ./dir/.. lib/bare.nix ./a/../b.nix ]",
    "{ }: { u = https://example.org/a/b; s = <nixpkgs/lib>; h = ~/home.nix; a = /abs.nix; }",
    # A block comment's close ends in `/`: the path right after it is a token of its own.
    "{ }: [ /* the builder */./after-comment.nix /**/../up-after-comment.nix ]",
    "{ a, x }: [ (a /**///./after-update.nix) /**/./comment-gen/${x} ]",
    # The raw reading takes every `./` before an interpolation for a folder (`_RAW_INTERPOLATED`).
    "{ x }: [ ab./c/${x} a../${x} ]",
)


def _corpus() -> list[tuple[str, str]]:
    """Every Nix file of this checkout (its recipes, builders, test data) and the edges."""
    from tests.conftest import REPO_ROOT

    found = [
        (path.relative_to(REPO_ROOT).as_posix(), path.read_text(encoding="utf-8"))
        for folder in (".flox", "nix", "tests/data")
        for path in sorted((REPO_ROOT / folder).rglob("*.nix"))
    ]
    return [
        *found,
        (PATH, TRICKY.decode()),
        *((f"nix/sub/edge{i}.nix", t) for i, t in enumerate(EDGES)),
    ]


def test_broad_references_hold_every_raw_reference() -> None:
    for path, text in _corpus():
        missed = set(raw_references(path, text).every) - set(broad_references(path, text))
        assert not missed, (path, missed)


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="needs nix-instantiate")
def test_broad_references_hold_every_reference_nix_parses() -> None:
    corpus = _corpus()
    read = NixReader().read({path: text.encode() for path, text in corpus})
    assert all(
        read[path].parsed for path in (PATH, *(f"nix/sub/edge{i}.nix" for i in range(len(EDGES))))
    )
    for path, text in corpus:
        missed = set(read[path].references) - set(broad_references(path, text))
        assert not missed, (path, missed)


def test_broad_references_of_the_edges() -> None:
    got = set(broad_references("nix/f.nix", "{ a'b }: [ a'b./c.nix a//./u.nix ./${x} ]"))
    assert {"nix/c.nix", "nix/u.nix", "nix/"} <= got
