"""Input fingerprints: what they cover, and what they leave out."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from ci_tools.catalog.model import Catalog
from ci_tools.catalog.variants import expand
from ci_tools.plan.checkout import Checkout, dir_tree
from ci_tools.plan.fingerprint import Fingerprinter, Fingerprints, build_facts
from ci_tools.plan.nixinputs import NixReader
from tests.gitutil import commit_all, init, write

needs_nix = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None, reason="nix-instantiate is not installed"
)

NAME = "pytorch-python313-cpu-avx2"
RECIPE = (
    "{ fetchPinnedNixpkgs ? import ../../nix/fetch-nixpkgs.nix }:\n"
    "import ../../nix/builders/torch.nix { src = ./patches; }\n"
)
BUILDER = "{ src }: { inherit src; flags = ''\n  # string content\n''; }\n"


def tree_of(root: Path) -> Path:
    write(root, f".flox/pkgs/{NAME}.nix", RECIPE)
    write(root, "nix/fetch-nixpkgs.nix", "{ rev, sha256 }: rev\n")
    write(root, "nix/builders/torch.nix", BUILDER)
    write(root, ".flox/pkgs/patches/a.patch", "--- a\n")
    write(root, ".flox/env/manifest.toml", "version = 1\n")
    write(root, ".flox/env/manifest.lock", "{}\n")
    write(root, "README.md", "docs\n")
    return root


def fingerprint(root: Path, *, use_nix: bool = True, facts: object = "facts") -> Fingerprints:
    reader = NixReader(use_nix=use_nix)
    return Fingerprinter(reader).stacks(dir_tree(root), {"s": [NAME]}, {NAME: facts})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tree_of(tmp_path / "repo")


@needs_nix
@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("nix/builders/torch.nix", BUILDER.replace("# string content", "# other content")),
        ("nix/fetch-nixpkgs.nix", "{ rev, sha256 }: sha256\n"),
        (".flox/pkgs/patches/a.patch", "--- b\n"),
        (".flox/pkgs/patches/b.patch", "--- new file in a referenced folder\n"),
        (".flox/env/manifest.toml", "version = 1\n# any byte\n"),
        (".flox/env/manifest.lock", '{"lockfile-version": 1}\n'),
    ],
)
def test_every_input_changes_the_fingerprint(root: Path, path: str, text: str) -> None:
    before = fingerprint(root).by_stack["s"]
    write(root, path, text)
    assert fingerprint(root).by_stack["s"] != before


@needs_nix
@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("README.md", "other docs\n"),
        (".flox/.gitignore", "/run/\n"),
        ("nix/builders/unused.nix", "{ }: 1\n"),
        ("nix/builders/torch.nix", "# a comment\n" + BUILDER.replace("{ src }:", "{src}:")),
    ],
)
def test_what_is_no_input_leaves_it(root: Path, path: str, text: str) -> None:
    before = fingerprint(root).by_stack["s"]
    write(root, path, text)
    assert fingerprint(root).by_stack["s"] == before


def test_catalog_facts_and_the_normalisation_are_inputs(root: Path) -> None:
    raw = fingerprint(root, use_nix=False).by_stack["s"]
    assert fingerprint(root, use_nix=False, facts="other").by_stack["s"] != raw
    if shutil.which("nix-instantiate") is not None:
        assert fingerprint(root).by_stack["s"] != raw


@needs_nix
def test_a_deleted_import_changes_it_and_is_reported(root: Path) -> None:
    before = fingerprint(root).by_stack["s"]
    (root / "nix/builders/torch.nix").unlink()
    after = fingerprint(root)
    assert after.by_stack["s"] != before
    (problem,) = after.problems
    assert problem.startswith(f".flox/pkgs/{NAME}.nix references nix/builders/torch.nix")


def test_without_nix_only_a_reference_in_code_to_nothing_is_reported(root: Path) -> None:
    """A comment's or a string's path (nix/nixpkgs.nix's `./overlays/NAME.nix`) is no import."""
    builder = "nix/builders/torch.nix"
    write(root, builder, '# see ./overlays/NAME.nix\n{ src }: { inherit src; x = "./no.nix"; }\n')
    assert fingerprint(root, use_nix=False).problems == ()
    write(root, builder, "{ src }: import ./gone.nix { inherit src; }\n")
    (problem,) = fingerprint(root, use_nix=False).problems
    assert problem.startswith(f"{builder} references nix/builders/gone.nix, which is not in ")
    assert "may sit in a comment" not in problem
    # Text that does not lex (an unterminated comment): the report hedges.
    write(root, builder, "{ src }: import ./gone.nix { inherit src; } /* open\n")
    (problem,) = fingerprint(root, use_nix=False).problems
    assert "nix/builders/gone.nix" in problem and "may sit in a comment" in problem


def test_default_nix_package_covers_its_folder(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, f".flox/pkgs/{NAME}/default.nix", "{ }: 1\n")
    write(root, f".flox/pkgs/{NAME}/fix.patch", "a\n")
    before = fingerprint(root, use_nix=False).by_stack["s"]
    write(root, f".flox/pkgs/{NAME}/fix.patch", "b\n")
    assert fingerprint(root, use_nix=False).by_stack["s"] != before


def test_git_tree_reads_the_commit_not_the_working_tree(tmp_path: Path) -> None:
    root = tree_of(init(tmp_path / "repo"))
    commit_all(root, "inputs")
    checkout = Checkout(root=root)
    fingerprinter = Fingerprinter(NixReader())
    stacks = {"s": [NAME]}
    committed = fingerprinter.stacks(checkout.tree("HEAD"), stacks, {}).by_stack["s"]
    write(root, "nix/builders/torch.nix", BUILDER.replace("src", "source"))
    assert fingerprinter.stacks(checkout.tree("HEAD"), stacks, {}).by_stack["s"] == committed
    commit_all(root, "edit")
    assert fingerprinter.stacks(checkout.tree("HEAD"), stacks, {}).by_stack["s"] != committed


def test_build_facts_count_build_fields_only(catalog: Catalog) -> None:
    variant = next(v for v in expand(catalog, "main") if v.gpu is not None)
    facts = build_facts(variant, catalog)
    assert variant.gpu is not None and variant.isa is not None
    described = dataclasses.replace(
        variant,
        gpu=dataclasses.replace(variant.gpu, family="x", hardware=("y",)),
        isa=dataclasses.replace(variant.isa, description="z", hardware="w"),
        branch=dataclasses.replace(variant.branch, min_driver=1),
    )
    assert build_facts(described, catalog) == facts
    pinned = dataclasses.replace(
        variant, branch=dataclasses.replace(variant.branch, nixpkgs_rev="0" * 40)
    )
    assert build_facts(pinned, catalog) != facts
    flags = dataclasses.replace(
        variant, isa=dataclasses.replace(variant.isa, compiler_flags=("-O3",))
    )
    assert build_facts(flags, catalog) != facts


def test_toolkit_records_count_without_where_they_are_declared() -> None:
    from ci_tools.plan.fingerprint import record_facts

    @dataclasses.dataclass(frozen=True)
    class Toolkit:
        name: str
        nixpkgs_rev: str
        min_driver: int
        overlay_lines: tuple[int, ...]
        line: int

    one = Toolkit("cuda12_8", "a" * 40, 550, (3,), 10)
    assert record_facts(one) == record_facts(dataclasses.replace(one, line=99, overlay_lines=(7,)))
    assert record_facts(one) != record_facts(dataclasses.replace(one, nixpkgs_rev="b" * 40))
