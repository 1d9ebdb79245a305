"""Change detection on real git repositories the tests create: REF..HEAD -> variants."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools import layout
from ci_tools.catalog import load_catalog
from ci_tools.changes import ChangeSet, affected_variants
from ci_tools.model import Catalog, Kind
from ci_tools.variants import Variant, expand

REPO_ROOT = Path(__file__).resolve().parent.parent
BRANCH = "main"

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "ci-tools tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "ci-tools tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _shared_files(variants: tuple[Variant, ...]) -> set[str]:
    files = set()
    for variant in variants:
        files.update(layout.recipe_inputs(variant))
    return files


@pytest.fixture(scope="module")
def template_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build repository with the shipped catalog and one small file per input of `main`."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("template") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", BRANCH)
    shutil.copy(REPO_ROOT / "catalog.yaml", root / "catalog.yaml")
    catalog = load_catalog(root / "catalog.yaml", "catalog.yaml")
    for rel in sorted(_shared_files(expand(catalog, BRANCH))):
        write(root, rel, recipe_text(rel))
    write(root, "README.md", "# builds\n")
    commit_all(root, "base")
    return root


@pytest.fixture
def repo(template_repo: Path, tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(template_repo, root)
    return root


@pytest.fixture(scope="module")
def main_variants(catalog: Catalog) -> tuple[Variant, ...]:
    return expand(catalog, BRANCH)


Change = Callable[[Path], None]


def changed_since_base(repo: Path, change: Change, branch: str = BRANCH) -> ChangeSet:
    base = git(repo, "rev-parse", "HEAD")
    change(repo)
    commit_all(repo, "change")
    return affected_variants(repo, base, branch, repo / "catalog.yaml")


def edit_catalog(old: str, new: str) -> Change:
    def change(root: Path) -> None:
        path = root / "catalog.yaml"
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, old
        path.write_text(text.replace(old, new), encoding="utf-8")

    return change


def recipe_text(rel: str, body: str = "{ }", description: str = "a build") -> str:
    """Shaped like a rendered recipe: a comment header, the build, a meta description."""
    return f'# Generated for {rel}\n{body}\n  description = "{description}";\n'


def touch(*rels: str) -> Change:
    """A change that alters what the files build."""

    def change(root: Path) -> None:
        for rel in rels:
            write(root, rel, recipe_text(rel, body="{ changed = true; }"))

    return change


def names_where(variants: tuple[Variant, ...], keep: Callable[[Variant], bool]) -> frozenset[str]:
    selected = frozenset(v.name for v in variants if keep(v))
    assert selected, "the test's selection matches no variant"
    return selected


def test_documentation_only_change_schedules_nothing(repo: Path) -> None:
    result = changed_since_base(repo, touch("README.md", "docs/recipes.md"))
    assert result == ChangeSet(names=frozenset(), notice=None)


def test_same_commit_schedules_nothing(repo: Path) -> None:
    result = affected_variants(repo, "HEAD", BRANCH, repo / "catalog.yaml")
    assert result.names == frozenset()


def test_gpu_build_field_schedules_that_sm_only(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    change = edit_catalog('capability: "9.0"\n', 'capability: "9.0"\n    cudnn: false\n')
    result = changed_since_base(repo, change)
    sm90 = names_where(main_variants, lambda v: v.gpu is not None and v.gpu.name == "sm90")
    assert result.names == sm90
    assert any(name.startswith("torchvision-") for name in sm90)


def test_descriptive_catalog_fields_schedule_nothing(repo: Path) -> None:
    # A hardware list, a family, an ISA's description: neither the recipe nor its checks change.
    def change(root: Path) -> None:
        edit_catalog("hardware: [H100, H200]", "hardware: [H100, H200, GH200]")(root)
        edit_catalog("family: Hopper\n", "family: Hopper (datacenter)\n")(root)
        edit_catalog("description: AVX2\n", "description: AVX2 and FMA\n")(root)
        edit_catalog(
            "min_driver: 550\n    nixpkgs: {rev: fe5e", "min_driver: 560\n    nixpkgs: {rev: fe5e"
        )(root)

    assert changed_since_base(repo, change).names == frozenset()


def test_hardware_edit_rerendering_recipe_comments_schedules_nothing(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    # `generate` repeats the hardware list in each recipe's header and meta.description:
    # those lines change, the derivation does not.
    def change(root: Path) -> None:
        edit_catalog("hardware: [H100, H200]", "hardware: [H100, H200, GH200]")(root)
        for variant in main_variants:
            if variant.gpu is not None and variant.gpu.name == "sm90":
                rel = layout.recipe_path(variant.name)
                text = recipe_text(rel, description="for H100, H200, GH200")
                write(root, rel, text.replace("# Generated", "# Regenerated"))

    assert changed_since_base(repo, change).names == frozenset()


@pytest.mark.parametrize("path", [f"{layout.LIB_DIR}/torch-cuda.nix", layout.MANIFEST])
def test_comment_and_blank_line_edits_schedule_nothing(repo: Path, path: str) -> None:
    def change(root: Path) -> None:
        text = (root / path).read_text(encoding="utf-8")
        write(root, path, "# Why this file looks the way it does.\n\n" + text + "\n   \n")

    assert changed_since_base(repo, change).names == frozenset()


def test_recipe_body_change_with_comments_is_scheduled(repo: Path) -> None:
    name = "pytorch-python313-cuda12_8-sm90-avx2"
    rel = layout.recipe_path(name)

    def change(root: Path) -> None:
        write(root, rel, recipe_text(rel, body="{ cudnn = false; }", description="changed"))

    result = changed_since_base(repo, change)
    assert result.names == {name, name.replace("pytorch-", "torchvision-")}


def test_moved_catalog_lines_schedule_nothing(repo: Path) -> None:
    change = edit_catalog("packages:\n", "# Moved every line down.\n\n\npackages:\n")
    assert changed_since_base(repo, change).names == frozenset()


def test_isa_compiler_flags_schedule_that_isa_only(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    change = edit_catalog(
        "compiler_flags: [-mavx512f, -mavx512dq, -mavx512vl, -mavx512bw, -mavx512bf16, -mfma]",
        "compiler_flags: [-mavx512f, -mavx512dq, -mavx512vl, -mavx512bw, -mavx512bf16, -mfma, -mavx512fp16]",
    )
    result = changed_since_base(repo, change)
    bf16 = names_where(main_variants, lambda v: v.isa is not None and v.isa.name == "avx512bf16")
    assert result.names == bf16
    assert {v.kind for v in main_variants if v.name in bf16} == {Kind.CPU, Kind.GPU}


def test_branch_pin_schedules_every_variant_of_that_branch(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    change = edit_catalog("rev: fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3", "rev: " + "a1" * 20)
    assert changed_since_base(repo, change).names == {v.name for v in main_variants}


def test_another_branchs_pin_schedules_nothing_here(repo: Path) -> None:
    change = edit_catalog(
        "cuda_packages: cudaPackages_13_0", "cuda_packages: cudaPackages_13_0\n    overlays: [x]"
    )
    assert changed_since_base(repo, change).names == frozenset()


def test_torchvision_version_schedules_torchvision_only(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    change = edit_catalog('torchvision: "0.23.0"', 'torchvision: "0.23.1"')
    result = changed_since_base(repo, change)
    assert result.names == names_where(main_variants, lambda v: v.package.name == "torchvision")


def test_torchvision_recipe_change_schedules_that_variant_only(repo: Path) -> None:
    name = "torchvision-python313-cuda12_8-sm90-avx512"
    result = changed_since_base(repo, touch(layout.recipe_path(name)))
    assert result.names == {name}


def test_pytorch_recipe_change_schedules_its_stack(repo: Path) -> None:
    result = changed_since_base(repo, touch(layout.recipe_path("pytorch-python313-cpu-avx2")))
    assert result.names == {"pytorch-python313-cpu-avx2", "torchvision-python313-cpu-avx2"}


def test_darwin_recipe_change_schedules_it_alone(repo: Path) -> None:
    # main builds no TorchVision for MPS: nothing else shares the suffix.
    result = changed_since_base(repo, touch(layout.recipe_path("pytorch-python313-darwin-mps")))
    assert result.names == {"pytorch-python313-darwin-mps"}


def test_lib_builder_change_schedules_variants_of_that_kind(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    result = changed_since_base(repo, touch(f"{layout.LIB_DIR}/torch-cpu.nix"))
    # TorchVision on CPU builds against the CPU torch, so it rebuilds too.
    assert result.names == names_where(main_variants, lambda v: v.kind is Kind.CPU)


def test_dependent_builder_change_schedules_dependents(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    result = changed_since_base(repo, touch(layout.DEPENDENT_BUILDER))
    assert result.names == names_where(main_variants, lambda v: v.package.requires is not None)


def test_template_change_schedules_variants_rendered_from_it(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    result = changed_since_base(
        repo, touch(f"{layout.TEMPLATES_DIR}/pkgs/torch-darwin-variant.nix.j2")
    )
    assert result.names == names_where(main_variants, lambda v: v.kind is Kind.DARWIN)


@pytest.mark.parametrize(
    "path", [layout.MANIFEST, layout.NIXPKGS_LIB, f"{layout.LIB_DIR}/magma.nix"]
)
def test_shared_input_change_schedules_all(
    repo: Path, main_variants: tuple[Variant, ...], path: str
) -> None:
    # An unknown file under the lib directory may be imported by any recipe.
    result = changed_since_base(repo, touch(path))
    assert result.names == {v.name for v in main_variants}


def test_new_variant_in_catalog_is_scheduled(
    repo: Path, main_variants: tuple[Variant, ...]
) -> None:
    change = edit_catalog(
        "          sm61: [avx, avx2]\n          sm80: &six_isas",
        "          sm61: [avx, avx2]\n          sm75: [avx2]\n          sm80: &six_isas",
    )
    result = changed_since_base(repo, change)
    assert result.names == {"pytorch-python313-cuda12_8-sm75-avx2"}


def test_unknown_ref_schedules_full_matrix_with_notice(repo: Path) -> None:
    result = affected_variants(repo, "no-such-ref", BRANCH, repo / "catalog.yaml")
    assert result.names is None
    assert result.notice is not None
    assert "no-such-ref" in result.notice and "full matrix" in result.notice


def test_unknown_sha_schedules_full_matrix(repo: Path) -> None:
    result = affected_variants(repo, "ab" * 20, BRANCH, repo / "catalog.yaml")
    assert result.names is None and result.notice is not None


def test_all_zero_ref_schedules_full_matrix_with_notice(repo: Path) -> None:
    result = affected_variants(repo, "0" * 40, BRANCH, repo / "catalog.yaml")
    assert result.names is None
    assert result.notice is not None and "new branch" in result.notice


def test_option_like_ref_is_not_passed_to_git_as_an_option(repo: Path) -> None:
    result = affected_variants(repo, "--all", BRANCH, repo / "catalog.yaml")
    assert result.names is None and result.notice is not None


def test_unparsable_catalog_at_ref_schedules_full_matrix(repo: Path) -> None:
    good = (repo / "catalog.yaml").read_text(encoding="utf-8")
    write(repo, "catalog.yaml", good.replace("packages:\n", "packages: [\n", 1))
    broken = commit_all(repo, "break the catalog")
    write(repo, "catalog.yaml", good)
    commit_all(repo, "fix the catalog")
    result = affected_variants(repo, broken, BRANCH, repo / "catalog.yaml")
    assert result.names is None
    assert result.notice is not None and "catalog.yaml at " in result.notice


def test_catalog_missing_at_ref_schedules_full_matrix(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", BRANCH)
    write(root, "README.md", "x\n")
    first = commit_all(root, "before the catalog")
    shutil.copy(REPO_ROOT / "catalog.yaml", root / "catalog.yaml")
    commit_all(root, "add the catalog")
    result = affected_variants(root, first, BRANCH, root / "catalog.yaml")
    assert result.names is None and result.notice is not None


def test_branch_new_in_catalog_schedules_all_its_variants(repo: Path, catalog: Catalog) -> None:
    def change(root: Path) -> None:
        edit_catalog("  cuda-13_0:\n", "  cuda-13_1:\n")(root)

    result = changed_since_base(repo, change, branch="cuda-13_1")
    assert result.names is not None
    assert len(result.names) == len(expand(catalog, "cuda-13_0"))


def test_not_a_repository_schedules_full_matrix(tmp_path: Path) -> None:
    shutil.copy(REPO_ROOT / "catalog.yaml", tmp_path / "catalog.yaml")
    result = affected_variants(tmp_path, "HEAD~1", BRANCH, tmp_path / "catalog.yaml")
    assert result.names is None and result.notice is not None


# A repository without a catalog: its variants are the recipe files it holds.

_RECIPES = (
    "pytorch-python313-cpu-avx2",
    "torchvision-python313-cpu-avx2",
    "torchaudio-python313-cpu-avx2",
    "pytorch-python313-cuda12_9-sm90-avx512",
    "torchvision-python313-cuda12_9-sm90-avx512",
)


@pytest.fixture
def bare_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", BRANCH)
    for name in _RECIPES:
        write(root, layout.recipe_path(name), recipe_text(name))
    write(root, f"{layout.LIB_DIR}/torch-cuda.nix", recipe_text("lib"))
    write(root, f"{layout.PKGS_DIR}/notes.txt", "not a recipe\n")
    write(root, "README.md", "# readme\n")
    commit_all(root, "base")
    return root


def bare_changed(root: Path, change: Change) -> ChangeSet:
    base = git(root, "rev-parse", "HEAD")
    change(root)
    commit_all(root, "change")
    return affected_variants(root, base, BRANCH, None)


def test_without_catalog_docs_change_schedules_nothing(bare_repo: Path) -> None:
    result = bare_changed(bare_repo, touch("README.md", f"{layout.PKGS_DIR}/notes.txt"))
    assert result.names == frozenset()


def test_without_catalog_pytorch_recipe_schedules_its_stack(bare_repo: Path) -> None:
    result = bare_changed(bare_repo, touch(layout.recipe_path("pytorch-python313-cpu-avx2")))
    assert result.names == {n for n in _RECIPES if n.endswith("-cpu-avx2")}


def test_without_catalog_dependent_recipe_schedules_itself(bare_repo: Path) -> None:
    name = "torchaudio-python313-cpu-avx2"
    assert bare_changed(bare_repo, touch(layout.recipe_path(name))).names == {name}


@pytest.mark.parametrize("path", [f"{layout.LIB_DIR}/torch-cuda.nix", layout.MANIFEST])
def test_without_catalog_shared_change_schedules_all(bare_repo: Path, path: str) -> None:
    assert bare_changed(bare_repo, touch(path)).names == set(_RECIPES)


def test_build_repository_in_a_folder_of_a_larger_repository(
    template_repo: Path, tmp_path: Path
) -> None:
    outer = tmp_path / "outer"
    builds = outer / "builds"
    shutil.copytree(template_repo, builds, ignore=shutil.ignore_patterns(".git"))
    git(outer, "init", "-q", "-b", BRANCH)
    # A file outside builds/ at the path of an input: no input of the build repository.
    write(outer, layout.MANIFEST, "another = 1\n")
    base = commit_all(outer, "base")
    name = "pytorch-python313-darwin-mps"
    touch(layout.recipe_path(name))(builds)
    write(outer, layout.MANIFEST, "another = 2\n")
    commit_all(outer, "change")
    result = affected_variants(builds, base, BRANCH, builds / "catalog.yaml")
    assert result == ChangeSet(names=frozenset({name}), notice=None)
