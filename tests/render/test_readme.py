"""ci_tools.render.readme: the README's generated blocks and how they are spliced in."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.catalog import layout
from ci_tools.catalog.model import Catalog
from ci_tools.catalog.variants import expand
from ci_tools.render import readme, recipes


def _blocks(catalog: Catalog, repo_root: Path) -> dict[str, str]:
    return readme.render_blocks(catalog, recipes.environment())


def test_grid_of_main(catalog: Catalog) -> None:
    grid = readme.branch_grid(expand(catalog, "main"), catalog)
    assert grid.columns == ("avx", "avx2", "avx512", "avx512bf16", "avx512vnni", "armv8_2", "armv9")
    rows = dict(grid.rows)
    assert list(rows) == ["CPU only", "SM61", "SM80", "SM86", "SM89", "SM90", "SM100", "SM120"]
    assert rows["SM61"][:3] == ("pytorch, torchvision", "pytorch, torchvision", "")
    assert rows["CPU only"][0] == ""


def test_grid_of_cuda_13_0_shows_which_packages(catalog: Catalog) -> None:
    rows = dict(readme.branch_grid(expand(catalog, "cuda-13_0"), catalog).rows)
    assert rows["SM121"][-1] == "pytorch, torchvision"
    assert rows["SM90"][1] == "pytorch"
    assert "SM61" not in rows


def test_blocks_cover_every_branch_gpu_and_isa(catalog: Catalog, repo_root: Path) -> None:
    blocks = _blocks(catalog, repo_root)
    assert list(blocks) == ["variants", "gpus", "isas", "keys"]
    for branch in catalog.branches:
        assert f"### Branch `{branch}`" in blocks["variants"]
    assert "Recipes: 45 pytorch, 44 torchvision." in blocks["variants"]
    assert "Recipes: 60 pytorch, 4 torchvision." in blocks["variants"]
    assert (
        "Apple Silicon (aarch64-darwin, MPS): pytorch-python313-darwin-mps." in blocks["variants"]
    )
    for gpu in catalog.gpus.values():
        assert f"| {gpu.name} | {gpu.capability} |" in blocks["gpus"]
    assert (
        "| sm61 | 6.1 | Pascal |" in blocks["gpus"]
        and "| <= 12.9 | avx, avx2 | no |" in blocks["gpus"]
    )
    for isa in catalog.isas:
        assert f"| `{isa}` |" in blocks["isas"]
    for text in blocks.values():
        assert layout.GENERATED_MARKER in text.splitlines()[0]


def test_splice_replaces_only_the_blocks() -> None:
    text = (
        "intro\n<!-- BEGIN generated: a -->\nold\n<!-- END generated: a -->\nmiddle\n"
        "<!-- BEGIN generated: b -->\n<!-- END generated: b -->\nend\n"
    )
    out = readme.splice(text, {"a": "new a\n", "b": "new b\n"}, "README.md")
    assert out == (
        "intro\n<!-- BEGIN generated: a -->\nnew a\n<!-- END generated: a -->\nmiddle\n"
        "<!-- BEGIN generated: b -->\nnew b\n<!-- END generated: b -->\nend\n"
    )
    assert readme.splice(out, {"a": "new a\n", "b": "new b\n"}, "README.md") == out


def test_splice_keeps_backslashes_in_content() -> None:
    text = "<!-- BEGIN generated: a -->\n<!-- END generated: a -->\n"
    out = readme.splice(text, {"a": "C:\\1 \\g<0>\n"}, "README.md")
    assert "C:\\1 \\g<0>\n" in out


@pytest.mark.parametrize(
    "text",
    [
        "no markers\n",
        "<!-- BEGIN generated: a -->\n",
        "<!-- BEGIN generated: a -->\n<!-- END generated: a -->\n"
        "<!-- BEGIN generated: a -->\n<!-- END generated: a -->\n",
    ],
)
def test_splice_refuses_missing_or_repeated_markers(text: str) -> None:
    with pytest.raises(InputError, match=r"README\.md: .* generated block 'a'"):
        readme.splice(text, {"a": "x\n"}, "README.md")
