"""ci_tools.catalog.tables: the declarations of catalog.yaml and runners.yaml are whole and agree
with the records and files they describe."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.catalog import settings, tables
from ci_tools.catalog.model import Kind, Platform
from ci_tools.catalog.shape import Table, tables_in
from ci_tools.catalog.yamlsrc import Problems, load_yaml

DECLARED = [tables.CATALOG, tables.RUNNERS, settings.SETTINGS]


@pytest.mark.parametrize("root", DECLARED, ids=["catalog", "runners", "settings"])
def test_every_table_is_named_once_and_documented(root: Table) -> None:
    by_name: dict[str, Table] = {}
    for table in tables_in(root):
        assert table.name, "a table without a name has no JSON Schema definition"
        assert by_name.setdefault(table.name, table) is table, f"two tables named {table.name}"
        keys = [field.key for field in table.fields]
        assert len(keys) == len(set(keys)), f"{table.name}: a key declared twice"
        for field in table.fields:
            assert field.doc.endswith("."), f"{table.name}.{field.key}: no one-line description"
            assert not (field.required and field.default is not None), field.key


def test_the_words_are_the_records() -> None:
    assert set(tables.PLATFORMS) == {p.value for p in Platform}
    assert set(tables.LINUX) == {Platform.X86_64_LINUX.value, Platform.AARCH64_LINUX.value}
    assert set(tables.DEFAULT_MINUTES) == {k.value for k in Kind}


@pytest.mark.parametrize(
    ("root", "file"), [(tables.CATALOG, "catalog.yaml"), (tables.RUNNERS, "runners.yaml")]
)
def test_the_shipped_files_have_the_declared_shape(root: Table, file: str, repo_root: Path) -> None:
    problems = Problems()
    record = root.check_document(load_yaml(repo_root / file, file), problems)
    assert record is not None and record.ok, [str(p) for p in problems.items]


def test_a_branch_is_one_of_two_forms() -> None:
    assert isinstance(tables.BRANCH.first, Table) and isinstance(tables.BRANCH.second, Table)
    several, one = tables.BRANCH.first, tables.BRANCH.second
    assert several.marker == "toolkits" and several is tables.BRANCH_BY_TOOLKIT
    only_one = {f.key for f in one.fields} - {f.key for f in several.fields}
    assert only_one == {"cuda", "cuda_packages", "min_driver", "allow_broken"}
