"""ci_tools.render.recipes: catalog -> recipe text. Golden files for one recipe of each kind.

Refresh the golden files after an intended change with `UPDATE_GOLDEN=1 python3 -m pytest
tests/render/test_recipes.py` and review the diff.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.catalog.model import Catalog, Kind
from ci_tools.catalog.variants import expand, find
from ci_tools.render import recipes
from tests.conftest import GOLDEN

RENDER_GOLDEN = GOLDEN / "render"

# One recipe of each kind, by (branch, path in the output directory).
REPRESENTATIVES = (
    ("main", "pytorch-python313-cuda12_8-sm90-avx512.nix"),
    ("cuda-13_0", "pytorch-python313-cuda13_0-sm121-armv9.nix"),
    ("cuda-13_0", "pytorch-python313-cpu-avx512.nix"),
    ("cuda-13_0", "torchvision-python313-cuda13_0-sm110-armv9.nix"),
    ("main", "pytorch-python313-cuda12_8-sm61-avx.nix"),
    ("main", "pytorch-python313-cpu-avx2.nix"),
    ("main", "pytorch-python313-darwin-mps.nix"),
    ("main", "torchvision-python313-cuda12_8-sm90-avx512.nix"),
)


@pytest.fixture(scope="module")
def branches(catalog: Catalog, repo_root: Path) -> dict[str, dict[str, str]]:
    env = recipes.environment()
    return {
        branch: {f.path: f.text for f in recipes.render_branch(catalog, branch, env)}
        for branch in catalog.branches
    }


@pytest.mark.parametrize(("branch", "path"), REPRESENTATIVES)
def test_golden(branches: dict[str, dict[str, str]], branch: str, path: str) -> None:
    text = branches[branch][path]
    golden = RENDER_GOLDEN / branch / path
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"{golden} missing: run with UPDATE_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("branch", "recipes"),
    [("main", 44 + 1 + 44), ("cuda-12_9", 57 + 1 + 57), ("cuda-13_0", 59 + 1 + 4)],
)
def test_counts(branches: dict[str, dict[str, str]], branch: str, recipes: int) -> None:
    paths = set(branches[branch])
    assert len(paths) == recipes
    # Nothing in a folder: flox (NEF) would make a folder under .flox/pkgs a package set.
    assert all("/" not in p for p in paths)


def test_every_file_starts_with_the_header(branches: dict[str, dict[str, str]]) -> None:
    for branch, files in branches.items():
        for path, text in files.items():
            first = text.splitlines()[0]
            assert first == recipes.header("catalog.yaml", branch), path
            assert recipes.is_generated(text)
            assert f"ci-tools generate --branch {branch}" in first


def test_file_name_is_pname_and_gpu_targets_are_decimal(
    catalog: Catalog, branches: dict[str, dict[str, str]]
) -> None:
    for branch in catalog.branches:
        for variant in expand(catalog, branch):
            text = branches[branch][f"{variant.name}.nix"]
            assert f'  pname = "{variant.name}";' in text
            if variant.kind is Kind.GPU and variant.requires is None:
                assert variant.gpu is not None
                assert f'capability = "{variant.gpu.capability}";' in text
                assert "sm_" not in text


def test_dependent_imports_its_sibling(
    catalog: Catalog, branches: dict[str, dict[str, str]]
) -> None:
    for branch in catalog.branches:
        for variant in expand(catalog, branch):
            text = branches[branch][f"{variant.name}.nix"]
            if variant.requires is not None:
                assert (
                    f"torch = import ./{variant.requires}.nix {{ inherit fetchPinnedNixpkgs; }};"
                    in text
                )
                assert f"{variant.requires}.nix" in branches[branch]
            # Only the builder reads the package set: no recipe declares a torch of its own.
            assert ".torch" not in text


def test_every_recipe_has_one_argument_the_nixpkgs_door(
    branches: dict[str, dict[str, str]],
) -> None:
    for files in branches.values():
        for path, text in files.items():
            heads = [line for line in text.splitlines() if line.startswith("{ ")]
            assert heads == ["{ fetchPinnedNixpkgs ? import ../../nix/fetch-nixpkgs.nix }:"], path


def test_toolkit_pin_reaches_the_recipe(
    catalog: Catalog, branches: dict[str, dict[str, str]]
) -> None:
    for name in catalog.branches:
        for variant in expand(catalog, name):
            text = branches[name][f"{variant.name}.nix"]
            rev, _ = variant.pin
            assert f'rev = "{rev}";' in text
            if variant.toolkit is not None:
                assert f'cudaPackages = "{variant.toolkit.cuda_packages}";' in text
                assert ("allowBroken = true;" in text) == variant.toolkit.allow_broken
                for overlay in variant.toolkit.overlays:
                    assert f'"{overlay}"' in text
            else:
                assert "cudaPackages =" not in text and "allowBroken" not in text
            for source in variant.branch.sources:
                assert f'version = "{source.version}";' in text
                assert f'hash = "{source.hash}";' in text


def test_describe(catalog: Catalog) -> None:
    gpu = find(catalog, "main", "pytorch-python313-cuda12_8-sm90-avx512")
    assert recipes.describe(gpu) == (
        "pytorch 2.8.0 for SM90 (compute capability 9.0), CUDA 12.8, avx512, Python 3.13"
    )
    # Descriptive fields are not build inputs, so they stay out of the recipe's text.
    assert gpu.gpu is not None and gpu.isa is not None
    for text in (gpu.gpu.family, *gpu.gpu.hardware, gpu.isa.description):
        assert text not in recipes.describe(gpu)
    tv = find(catalog, "main", "torchvision-python313-cpu-avx2")
    assert recipes.describe(tv) == (
        "torchvision 0.23.0 built against pytorch-python313-cpu-avx2, Python 3.13"
    )
    mps = find(catalog, "main", "pytorch-python313-darwin-mps")
    assert recipes.describe(mps) == "pytorch 2.8.0 for Apple Silicon (MPS), Python 3.13"


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("9.0", '"9.0"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("${builtins.abort}", '"\\${builtins.abort}"'),
        ("back\\slash", '"back\\\\slash"'),
        ("two\nlines", '"two\\nlines"'),
        (True, "true"),
        (None, "null"),
        (32, "32"),
        (("-mavx2", "-mfma"), '[ "-mavx2" "-mfma" ]'),
        ((), "[ ]"),
    ],
)
def test_nix_literal(value: object, literal: str) -> None:
    assert recipes.nix_literal(value) == literal


def test_nix_literal_refuses_what_it_cannot_spell() -> None:
    with pytest.raises(TypeError):
        recipes.nix_literal(1.5)


def test_is_generated_looks_at_the_first_lines_only() -> None:
    assert recipes.is_generated(recipes.header("catalog.yaml", "main") + "\n{ }\n")
    assert not recipes.is_generated("{ }\n")
    assert not recipes.is_generated("a\nb\nc\n# Generated by ci-tools\n")


def test_broken_template_names_file_and_line(
    tmp_path: Path, catalog: Catalog, repo_root: Path
) -> None:
    templates = tmp_path / "templates"  # the copy of ci_tools/render/templates
    subprocess.run(
        ["cp", "-r", str(repo_root / "ci_tools/render/templates"), str(tmp_path)], check=True
    )
    (templates / "pkgs" / "torch-cpu-variant.nix.j2").write_text(
        "line one\n{% if %}\n", encoding="utf-8"
    )
    env = recipes.environment(templates)
    with pytest.raises(InputError, match=r"templates/pkgs/torch-cpu-variant\.nix\.j2:2: "):
        recipes.render_branch(catalog, "main", env)


def test_undefined_template_variable_is_an_error(
    tmp_path: Path, catalog: Catalog, repo_root: Path
) -> None:
    subprocess.run(
        ["cp", "-r", str(repo_root / "ci_tools/render/templates"), str(tmp_path)], check=True
    )
    (tmp_path / "templates" / "pkgs" / "torch-cpu-variant.nix.j2").write_text(
        "{{ nope }}\n", encoding="utf-8"
    )
    env = recipes.environment(tmp_path / "templates")
    with pytest.raises(InputError, match=r"torch-cpu-variant\.nix\.j2: 'nope' is undefined"):
        recipes.render_branch(catalog, "main", env)


def test_missing_templates_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no templates here"):
        recipes.environment(tmp_path / "templates")


def test_importing_render_does_not_import_jinja2() -> None:
    code = "import sys, ci_tools.render.recipes, ci_tools.render.readme, ci_tools.commands.generate; print('jinja2' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
