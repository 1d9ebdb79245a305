"""The selector page from a catalog and, when given, the release records: one HTML file."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

from ci_tools.build.results import ResultRecord
from ci_tools.build.smoke.expect import from_catalog
from ci_tools.catalog.model import Catalog
from ci_tools.host.candidates import every_variant
from ci_tools.page import data, html, records


def only(catalog: Catalog, branches: Sequence[str]) -> Catalog:
    """The catalog with just `branches` (all when none are named): the page answers, and
    points to other branches, within them."""
    if not branches:
        return catalog
    for name in branches:
        catalog.branch(name)  # an unknown name is bad input that lists the known ones
    return dataclasses.replace(
        catalog, branches={name: catalog.branches[name] for name in dict.fromkeys(branches)}
    )


def make(
    catalog: Catalog,
    org: str,
    results: Iterable[ResultRecord],
    generated: str,
    templates_dir: Path | None = None,
) -> str:
    facts = records.by_variant(results, catalog.branches, from_catalog(catalog))
    page = data.page_data(catalog, org, facts, generated)
    rows = [
        data.variant_row(v, org, facts.get(f"{v.branch.name}/{v.name}"))
        for v in every_variant(catalog)
    ]
    return html.render(page, rows, templates_dir)
