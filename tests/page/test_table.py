"""table: the page's answers are detect's, kept once each, with markers where a capability or a
driver the person gives goes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ci_tools.catalog.model import Catalog
from ci_tools.host.facts import Host
from ci_tools.page import choices, site, table


def resolve(value: Any, store: table.Answers, swaps: dict[str, str]) -> Any:
    """What the page's script does with a table entry (selector.js, resolve)."""
    if isinstance(value, str):
        for marker, text in swaps.items():
            value = value.replace(marker, text)
        return value
    if isinstance(value, list):
        return [resolve(v, store, swaps) for v in value]
    if isinstance(value, dict):
        if "$v" in value:
            return resolve(store.variants[value["$v"]], store, swaps)
        return {k: resolve(v, store, swaps) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def main_only(catalog: Catalog) -> tuple[table.Context, dict[str, Any], table.Answers]:
    ctx = table.context(site.only(catalog, ["main", "cuda-13_0"]), "acme")
    rows, store = table.build(ctx)
    return ctx, rows, store


def _entry(rows: dict[str, Any], machine: str, gpu: str, cpu: str, driver: str | None) -> int:
    cell = rows[f"main|3.13|general|{machine}"][gpu][cpu]
    if isinstance(cell, int):
        return cell
    return int(cell[choices.driver_class(driver, (570, 580))])


@pytest.mark.parametrize(
    ("machine", "gpu", "cc", "cpu", "flags", "driver"),
    [
        (
            "x86_64",
            "sm90",
            "9.0",
            "avx+avx2+avx512",
            "avx avx2 fma f16c avx512f avx512dq avx512vl avx512bw",
            None,
        ),
        ("x86_64", "sm90", "9.0", "avx+avx2", "avx avx2 fma f16c", "565.1"),
        ("aarch64", "sm121", "12.1", "armv8_2+armv9", "fphp asimdhp asimddp sve sve2", "580.95.05"),
        # A capability the catalog does not know, between its oldest and newest; a driver
        # between the thresholds.
        ("x86_64", "cc-between", "7.0", "avx+avx2", "avx avx2 fma f16c", "575.57.08"),
        ("x86_64", "cc-newer", "13.0", "none", "", "610.1"),
        ("x86_64", "none", None, "avx", "avx", None),
    ],
)
def test_an_entry_is_what_detect_says_for_the_same_facts(
    main_only: tuple[table.Context, dict[str, Any], table.Answers],
    machine: str,
    gpu: str,
    cc: str | None,
    cpu: str,
    flags: str,
    driver: str | None,
) -> None:
    ctx, rows, store = main_only
    swaps = {choices.CC_MARKER: cc or "", choices.DRIVER_MARKER: driver or ""}
    got = resolve(store.answers[_entry(rows, machine, gpu, cpu, driver)], store, swaps)
    host = Host.described(
        machine=machine, capabilities=[cc] if cc else [], cpu_flags=flags.split(), driver=driver
    )
    expected = table.ask(ctx, {"branch": "main", "python": "3.13", "workload": "general"}, host)
    assert got == {k: v for k, v in expected.items() if k not in table.ECHO}
    assert choices.CC_MARKER not in str(got) and choices.DRIVER_MARKER not in str(got)


def test_answers_do_not_depend_on_the_representatives(
    main_only: tuple[table.Context, dict[str, Any], table.Answers],
) -> None:
    """Another representative capability and driver per class: the same table, marker for
    marker. Were a representative quoted anywhere but where it stands for the person's value,
    the two would differ."""
    ctx, rows, store = main_only
    known = choices.known_capabilities(ctx.catalog)
    other = dataclasses.replace(
        ctx,
        drivers=choices.driver_representatives(ctx.thresholds, variant=1),
        ccs=choices.cc_representatives(known, repr(ctx.catalog), variant=1),
    )
    assert other.drivers != ctx.drivers and other.ccs != ctx.ccs
    rows2, store2 = table.build(other)
    assert (rows2, store2.answers, store2.variants) == (rows, store.answers, store.variants)


def test_each_answer_and_variant_is_kept_once(
    main_only: tuple[table.Context, dict[str, Any], table.Answers],
) -> None:
    _, rows, store = main_only
    indices = set()
    for gpus in rows.values():
        for cells in gpus.values():
            for cell in cells.values():
                indices.update(cell if isinstance(cell, list) else [cell])
    assert indices == set(range(len(store.answers)))
    assert len({repr(a) for a in store.answers}) == len(store.answers)
    assert all("$v" not in str(v) for v in store.variants.values())


def test_marked_replaces_only_inside_strings() -> None:
    data = {"reason": "driver 569.9999.9999 is old", "min_driver": 569, "list": ["569.9999.9999"]}
    assert table.marked(data, "569.9999.9999", "<d>") == {
        "reason": "driver <d> is old",
        "min_driver": 569,
        "list": ["<d>"],
    }
    assert table.marked(data, "1.2", "<x>") is data
