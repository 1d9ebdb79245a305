"""The built-in facts a repository without a catalog is read with are the shipped catalog's."""

from __future__ import annotations

import dataclasses

import pytest

from ci_tools.catalog import builtin
from ci_tools.catalog.model import Catalog


def _unplaced(record: object) -> object:
    return dataclasses.replace(record, line=0)  # type: ignore[type-var]


def test_the_tables_equal_the_shipped_catalogs(catalog: Catalog) -> None:
    for built_in, shipped in (
        (builtin.PACKAGES, catalog.packages),
        (builtin.ISAS, catalog.isas),
        (builtin.GPUS, catalog.gpus),
    ):
        assert {k: _unplaced(v) for k, v in shipped.items()} == dict(built_in)


@pytest.mark.parametrize(
    ("sm", "capability", "cudnn"),
    [
        ("sm90", "9.0", True),
        ("sm61", "6.1", False),
        ("sm72", "7.2", False),
        ("sm130", "13.0", True),
    ],
)
def test_an_sm_is_its_capability_by_name(sm: str, capability: str, cudnn: bool) -> None:
    gpu = builtin.gpu(sm)
    assert (gpu.name, gpu.capability, gpu.cudnn) == (sm, capability, cudnn)
