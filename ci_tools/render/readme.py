"""The generated blocks of the README and the manual (docs/): variant tables per branch, the
GPU and CPU ISA references, and the key reference of catalog.yaml and runners.yaml (`keys.py`).

The blocks are rendered from the whole catalog, whichever branch `generate` renders recipes
for, so every branch's documents show every branch. Each block sits, once, in the README or
one page under docs/ (this repository keeps them in docs/reference.md), between
`<!-- BEGIN generated: NAME -->` and `<!-- END generated: NAME -->`; the prose around them
is the maintainers' and is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ci_tools.base.errors import InputError
from ci_tools.catalog.model import Catalog, Kind
from ci_tools.catalog.variants import Variant, expand
from ci_tools.render import keys
from ci_tools.render.recipes import render_template

if TYPE_CHECKING:
    import jinja2

# The blocks rendered from ci-tools' templates (render/templates/readme/); the key reference
# is ci-tools' own too (keys.py).
BLOCKS: tuple[str, ...] = ("variants", "gpus", "isas")


def template_of(block: str) -> str:
    return f"readme/{block}.md.j2"


def begin_marker(block: str) -> str:
    return f"<!-- BEGIN generated: {block} -->"


def end_marker(block: str) -> str:
    return f"<!-- END generated: {block} -->"


@dataclass(frozen=True, kw_only=True)
class Grid:
    """One branch's Linux variants: rows are CPU-only and each SM, columns are ISAs."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (row label, one cell per column)


def branch_grid(variants: tuple[Variant, ...], catalog: Catalog) -> Grid:
    linux = [v for v in variants if v.isa is not None]
    columns = tuple(isa for isa in catalog.isas if any(v.isa and v.isa.name == isa for v in linux))
    cells: dict[tuple[str, str], list[str]] = {}
    for variant in linux:
        assert variant.isa is not None
        packages = cells.setdefault((_row_label(variant), variant.isa.name), [])
        if variant.package.name not in packages:
            packages.append(variant.package.name)
    labels = ["CPU only", *(gpu.upper() for gpu in catalog.gpus)]
    rows = tuple(
        (label, tuple(", ".join(cells.get((label, column), [])) for column in columns))
        for label in labels
        if any(row == label for row, _ in cells)
    )
    return Grid(columns=columns, rows=rows)


def _row_label(variant: Variant) -> str:
    if variant.gpu is not None:
        return variant.gpu.name.upper()
    return "CPU only"


def _example(variants: tuple[Variant, ...]) -> str:
    """A name that shows every part of the grammar: a GPU one where the branch has one."""
    gpu = [v.name for v in variants if v.kind is Kind.GPU]
    return gpu[0] if gpu else (variants[0].name if variants else "")


def block_context(catalog: Catalog) -> dict[str, object]:
    branches = []
    for name, branch in catalog.branches.items():
        variants = expand(catalog, name)
        counts = {
            package: sum(1 for v in variants if v.package.name == package)
            for package in branch.variants
        }
        branches.append(
            {
                "branch": branch,
                "grid": branch_grid(variants, catalog),
                "counts": counts,
                "darwin": [v.name for v in variants if v.kind is Kind.DARWIN],
                "example": _example(variants),
            }
        )
    gpu_branches = {
        gpu: [
            name
            for name in catalog.branches
            if any(v.gpu is not None and v.gpu.name == gpu for v in expand(catalog, name))
        ]
        for gpu in catalog.gpus
    }
    return {
        "catalog": catalog,
        "catalog_file": catalog.path.name,
        "branches": branches,
        "gpu_branches": gpu_branches,
    }


def render_blocks(catalog: Catalog, env: jinja2.Environment) -> dict[str, str]:
    context = block_context(catalog)
    blocks = {block: render_template(env, template_of(block), context) for block in BLOCKS}
    blocks[keys.BLOCK] = keys.reference()
    return blocks


def splice(text: str, blocks: Mapping[str, str], file_name: str) -> str:
    """`text` with each block's content replaced; markers missing or out of order are bad input."""
    return splice_documents({file_name: text}, blocks)[file_name]


def splice_documents(texts: Mapping[str, str], blocks: Mapping[str, str]) -> dict[str, str]:
    """Each document's text with the blocks it holds replaced. The blocks may sit in any of
    the documents (the README, or pages under docs/), each exactly once across all of them;
    missing or repeated markers are bad input naming the documents searched."""
    new = dict(texts)
    for block, content in blocks.items():
        pattern = re.compile(
            re.escape(begin_marker(block)) + r"\n.*?" + re.escape(end_marker(block)), re.DOTALL
        )
        found = [(name, match) for name, text in new.items() for match in pattern.finditer(text)]
        if len(found) != 1:
            searched = ", ".join(texts) if len(texts) <= 3 else "README.md and docs/*.md"
            holders = ", ".join(sorted({name for name, _ in found})) or searched
            problem = "no" if not found else f"{len(found)}"
            raise InputError(
                f"{holders}: {problem} generated block {block!r}; put the lines "
                f"{begin_marker(block)} and {end_marker(block)} where the table belongs, once"
            )
        name, match = found[0]
        start, end = match.span()
        text = new[name]
        new[name] = f"{text[:start]}{begin_marker(block)}\n{content}{end_marker(block)}{text[end:]}"
    return new
