"""The selector page in a real browser (headless Debian chromium through Selenium).

One page load answers every combination of the shipped catalog (branch x Python x workload x
machine x CPU x GPU x driver class, and raw flags for every CPU a flag list can describe); each
answer must equal what `ci-tools detect --json` gives for the same facts, and show only
install lines of variants that exist."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from ci_tools.catalog.model import Catalog, Platform
from ci_tools.host.candidates import every_variant
from ci_tools.host.detect import workloads
from ci_tools.host.facts import Host
from ci_tools.page import choices, table
from tests.page.conftest import screenshot_dir, wrote

UNKNOWN_CC = ("5.2", "7.0", "13.0")  # older than, between and newer than the catalog's SMs
BATCH = 400


@dataclass(frozen=True)
class Combo:
    query: dict[str, str]
    facts: dict[str, Any]  # what detect is given: machine, gpu_cc, cpu_flags, driver

    @property
    def question(self) -> dict[str, str]:
        return {k: self.query[k] for k in ("branch", "python", "workload")}


def _drivers(catalog: Catalog) -> list[str | None]:
    """One driver in each class between the catalog's thresholds, as nvidia-smi prints one."""
    thresholds = choices.driver_thresholds(catalog)
    return [None, f"{thresholds[0] - 15}.54.15", *(f"{t}.65.06" for t in thresholds)]


def _linux(catalog: Catalog, base: dict[str, str], machine: choices.Machine) -> Iterator[Combo]:
    gpus = [(gpu.name, "gpu", gpu.capability) for gpu in catalog.gpus.values()]
    gpus += [("cc", "cc", cc) for cc in UNKNOWN_CC]
    for cpu in choices.named_classes(catalog, machine.platform):
        cpu_query = {**base, "cpu": cpu.key}
        facts = {"machine": machine.id, "cpu_flags": list(cpu.flags)}
        yield Combo({**cpu_query, "gpu": "none"}, {**facts, "gpu_cc": None, "driver": None})
        for name, key, capability in gpus:
            for driver in _drivers(catalog):
                query = {**cpu_query, key: name if key == "gpu" else capability}
                if driver is not None:
                    query["driver"] = driver
                yield Combo(query, {**facts, "gpu_cc": capability, "driver": driver})
    # Raw flags, as a script or `grep flags /proc/cpuinfo` gives them: every CPU a flag list
    # can describe, with flags of the ISAs it lacks and flags of no ISA besides.
    isas = choices.platform_isas(catalog, machine.platform)
    for cpu in choices.fit_sets(catalog, machine.platform):
        flags = ["fpu", *cpu.flags]
        for isa in isas:
            more = [f for f in isa.cpuinfo[:-1] if f not in flags]
            if choices.fit_key(i.name for i in choices.fits(isas, flags + more)) == cpu.key:
                flags += more
        for gpu in (None, "9.0"):
            query = {**base, "flags": ",".join(flags), "cc": gpu or "none"}
            yield Combo(
                query, {"machine": machine.id, "cpu_flags": flags, "gpu_cc": gpu, "driver": None}
            )


def combinations(catalog: Catalog) -> list[Combo]:
    out: list[Combo] = []
    for branch in catalog.branches.values():
        for python in branch.python:
            for workload in workloads(catalog):
                for machine in choices.machines():
                    base = {"branch": branch.name, "python": python, "workload": workload}
                    base["arch"] = machine.id
                    if machine.platform is Platform.AARCH64_DARWIN:
                        facts = {
                            "machine": machine.id,
                            "gpu_cc": None,
                            "cpu_flags": None,
                            "driver": None,
                        }
                        out.append(Combo(base, facts))
                    else:
                        out.extend(_linux(catalog, base, machine))
    return out


def apply_all(browser: Any, queries: list[str]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for start in range(0, len(queries), BATCH):
        batch = browser.execute_script(
            "return arguments[0].map(function (q) {"
            " return JSON.stringify(window.ciToolsSelector.apply(q)); });",
            queries[start : start + BATCH],
        )
        results += [json.loads(item) for item in batch]
    return results


def open_page(browser: Any, page_file: Path, query: str = "") -> None:
    browser.get(page_file.as_uri() + ("?" + query if query else ""))


def shown_installs(shown: dict[str, Any] | None, data: dict[str, Any]) -> list[str]:
    """What the page may show to install `shown` (issue 30 item 4): with records only what a
    release published; for a variant it did not, the nearest published one's line, if any."""
    if shown is None:
        return []
    publication, records = data["publication"], data["records"]
    if publication is None:
        return list(shown["installs"])

    def published(branch: str, name: str) -> bool:
        return bool((records.get(f"{branch}/{name}") or {}).get("org"))

    if published(shown["branch"], shown["package"]):
        names = [i.split("/")[-1] for i in shown["installs"]]
        return [
            f"flox install {records[shown['branch'] + '/' + n]['org']}/{n}"
            for n in names
            if published(shown["branch"], n)
        ]
    near = publication["nearest"].get(f"{shown['branch']}/{shown['package']}")
    if near is None:
        return []
    return [f"flox install {records[near]['org']}/{near.split('/', 1)[1]}"]


def test_parity_over_every_combination(browser: Any, page_file: Path, catalog: Catalog) -> None:
    open_page(browser, page_file)
    data = browser.execute_script("return window.ciToolsSelector.data")
    assert data["publication"] is not None  # the page has records: only published installs
    combos = combinations(catalog)
    assert len(combos) > 5000
    got = apply_all(browser, [urlencode(c.query) for c in combos])
    ctx = table.context(catalog, catalog.org or "")
    names = {v.name for v in every_variant(catalog)}
    for combo, result in zip(combos, got, strict=True):
        assert result["messages"] == [], combo.query
        assert result["facts"] == combo.facts, combo.query
        host = Host.described(
            machine=combo.facts["machine"],
            capabilities=[combo.facts["gpu_cc"]] if combo.facts["gpu_cc"] else [],
            cpu_flags=combo.facts["cpu_flags"] or (),
            driver=combo.facts["driver"],
        )
        if combo.facts["cpu_flags"] is None:
            host = Host(machine=combo.facts["machine"])
        expected = table.ask(ctx, combo.question, host)
        assert result["answer"] == expected, combo.query
        (rec,) = expected["recommendations"]
        shown = rec["best"] or rec["fallback"]
        assert result["shown"]["installs"] == shown_installs(shown, data), combo.query
        assert result["shown"]["packages"] == [rec["package"] or ""]
        for line in result["shown"]["installs"]:
            assert line.split("/", 1)[1] in names, line


def _selected(browser: Any) -> dict[str, str]:
    ids = ("gpu", "machine", "cpu", "branch", "python", "workload", "driver", "flags")
    return {i: browser.find_element("id", i).get_attribute("value") for i in ids}


@pytest.mark.parametrize(
    ("query", "selected", "package"),
    [
        (
            "gpu=sm90&arch=x86_64&cpu=avx%2Bavx2%2Bavx512&branch=main&workload=bf16-training",
            {"gpu": "sm90", "machine": "x86_64", "cpu": "avx+avx2+avx512", "branch": "main",
             "workload": "bf16-training"},
            "pytorch-python313-cuda12_8-sm90-avx512",
        ),
        # Raw facts, as a script opens the page: a Mac's uname, an unknown capability.
        ("arch=arm64&branch=cuda-12_9", {"machine": "arm64-darwin", "branch": "cuda-12_9"},
         "pytorch-python313-darwin-mps"),
        (
            "cc=12.1&arch=aarch64&flags=fphp,asimdhp,asimddp,sve,sve2&driver=580.95.05&branch=cuda-13_0",
            {"gpu": "sm121", "machine": "aarch64", "cpu": "armv8_2+armv9", "driver": "580.95.05",
             "flags": "fphp asimdhp asimddp sve sve2"},
            "pytorch-python313-cuda13_0-sm121-armv9",
        ),
        ("cc=7.0&arch=x86_64&cpu=avx%2Bavx2", {"gpu": "cc:7.0"}, ""),
        # A deep link with raw flags names every flag its ISA needs (/proc/cpuinfo has them
        # all); the README's example gave two and ended at "No pytorch build fits".
        (
            "cc=9.0&flags=avx,avx2,fma,f16c,avx512f,avx512dq,avx512vl,avx512bw,avx512_bf16"
            "&arch=x86_64&driver=580.65.06",
            {"gpu": "sm90", "cpu": "avx+avx2+avx512+avx512bf16"},
            "pytorch-python313-cuda12_8-sm90-avx512",
        ),
    ],
)  # fmt: skip
def test_deep_links_select_what_they_say(
    browser: Any, page_file: Path, query: str, selected: dict[str, str], package: str
) -> None:
    open_page(browser, page_file, query)
    values = _selected(browser)
    assert {k: values[k] for k in selected} == selected
    heading = browser.find_element("css selector", "#answer h2")
    assert heading.get_attribute("data-package") == package
    assert browser.find_element("id", "messages").text == ""


PAYLOADS = ("<script>window.__pwned=1</script>", '"><img src=x onerror="window.__pwned=1">')
PARAMS = ("branch", "python", "workload", "arch", "gpu", "cc", "cpu", "flags", "driver")


@pytest.mark.parametrize("payload", PAYLOADS)
def test_query_values_never_become_markup(browser: Any, page_file: Path, payload: str) -> None:
    open_page(browser, page_file, urlencode({p: payload for p in PARAMS}))
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    assert browser.execute_script("return document.scripts.length") == 2
    messages = browser.find_element("id", "messages").text
    # Each value the page could not take is named, as text.
    assert messages.count(payload[:40]) >= 6, messages
    assert browser.find_element("css selector", "#answer h2").text


@pytest.mark.parametrize(
    "query",
    ["%E0%A4%A&&=&gpu&cc=9.9.9&flags=,,,&driver=abc&branch=", "cpu=zz&arch=x86_64&python=2.7",
     "gpu=sm110&arch=x86_64", "flags=" + "a" * 5000],
)  # fmt: skip
def test_garbage_gives_a_message_never_a_blank_page(
    browser: Any, page_file: Path, query: str
) -> None:
    open_page(browser, page_file, query)
    answer = browser.find_element("id", "answer").text
    assert answer.strip()
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    if "sm110" not in query:
        assert browser.find_element("id", "messages").text


INHERITED = ("constructor", "__proto__", "hasOwnProperty", "toString")


@pytest.mark.parametrize("name", INHERITED)
@pytest.mark.parametrize("param", ["cpu", "arch", "gpu"])
def test_inherited_property_names_are_no_known_values(
    browser: Any, page_file: Path, param: str, name: str
) -> None:
    # Issue 29: ?cpu=constructor was found on the lookup table's prototype and taken.
    open_page(browser, page_file, urlencode({"arch": "x86_64", param: name}))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    messages = browser.find_element("id", "messages").text
    assert f"{param}: \u201c{name}\u201d is not a" in messages
    values = _selected(browser)
    assert name not in values.values()
    # An answer is shown (the defaults': on main no build for a plain AVX CPU, the nearest).
    assert browser.find_element("css selector", "#answer h2").text


def test_sm110_on_x86_is_dimmed_with_the_reason(browser: Any, page_file: Path) -> None:
    open_page(browser, page_file, "gpu=sm110&arch=x86_64&branch=cuda-13_0")
    machine = browser.find_element("css selector", "#machine option[value=x86_64]")
    assert machine.get_attribute("class") == "dim"
    assert (
        "sm110 builds are for aarch64-linux only" in browser.find_element("id", "machine-why").text
    )
    option = browser.find_element("css selector", "#gpu option[value=sm61]")
    assert option.get_attribute("class") == "dim"
    assert option.get_attribute("data-why") == "sm61 needs CUDA <= 12.9; cuda-13_0 has 13.0"
    answer = browser.find_element("id", "answer").text
    assert "pytorch-python313-cpu-avx" in answer  # the nearest that runs: the CPU build


def test_the_default_cpu_is_one_every_x86_64_cpu_runs(browser: Any, page_file: Path) -> None:
    """Issue 30 item 4: the default was AVX-512, which many desktops and laptops lack."""
    open_page(browser, page_file)
    assert _selected(browser)["machine"] == "x86_64"
    assert _selected(browser)["cpu"] == "avx"
    open_page(browser, page_file, "arch=aarch64")
    assert _selected(browser)["cpu"] == "armv8_2"


@pytest.mark.parametrize(
    ("name", "sm"),
    [("GeForce GTX 1060", "sm61"), ("GeForce RTX 3060", "sm86"), ("A10", "sm86"),
     ("GeForce RTX 4070", "sm89"), ("GH200", "sm90"), ("GeForce RTX 5080", "sm120")],
)  # fmt: skip
def test_gpus_by_the_names_nvidia_lists(browser: Any, page_file: Path, name: str, sm: str) -> None:
    open_page(browser, page_file)
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('#gpu option'))"
        ".map(function (o) { return [o.value, o.textContent.split(' \u2014 ')[0]]; });"
    )
    assert [sm, f"{name} ({sm})"] in labels


def test_a_typed_compute_capability_selects_its_gpu(browser: Any, page_file: Path) -> None:
    open_page(browser, page_file, "arch=x86_64&gpu=none")
    for typed, gpu in (("8.9", "sm89"), ("7.0", "cc:7.0"), ("", "none")):
        field = browser.find_element("id", "cc")
        field.clear()
        field.send_keys(typed)
        browser.execute_script("document.getElementById('cc').dispatchEvent(new Event('change'));")
        assert _selected(browser)["gpu"] == gpu, typed
    assert browser.find_element("id", "messages").text == ""


def test_only_published_variants_get_an_install_line(browser: Any, page_file: Path) -> None:
    """The records publish one variant: cuda-12_9's sm90-avx512 (tests/data)."""
    query = "gpu=sm90&arch=x86_64&cpu=avx%2Bavx2%2Bavx512&branch={}&driver=580.65.06"
    open_page(browser, page_file, query.format("cuda-12_9"))
    installs = browser.find_elements("css selector", "#answer code.install")
    assert [i.text for i in installs] == [
        "flox install acme/pytorch-python313-cuda12_9-sm90-avx512"
    ]
    open_page(browser, page_file, query.format("main"))
    answer = browser.find_element("id", "answer").text
    assert "Not published yet: no release of main has published" in answer
    assert "nearest published build" in answer and "(cuda-12_9)" in answer
    installs = browser.find_elements("css selector", "#answer code.install")
    assert [i.text for i in installs] == [
        "flox install acme/pytorch-python313-cuda12_9-sm90-avx512"
    ]


def test_keyboard_and_labels(browser: Any, page_file: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    open_page(browser, page_file, "gpu=none&arch=x86_64&cpu=avx%2Bavx2&branch=main")
    unlabelled = browser.execute_script(
        "return Array.from(document.querySelectorAll('select, input'))"
        ".filter(function (e) { return e.labels.length === 0; }).map(function (e) { return e.id; });"
    )
    assert unlabelled == []
    assert browser.find_element("id", "answer").get_attribute("aria-live") == "polite"
    gpu = browser.find_element("id", "gpu")
    gpu.send_keys(Keys.DOWN)
    assert gpu.get_attribute("value") == "sm61"
    assert "sm61" in browser.find_element("css selector", "#answer h2").text
    assert "gpu=sm61" in browser.current_url


def test_without_script_the_table_lists_every_variant(
    browser: Any, page_file: Path, catalog: Catalog
) -> None:
    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        open_page(browser, page_file)
        assert browser.find_element("id", "noscript-note").is_displayed()
        assert not browser.find_element("id", "choices").is_displayed()
        rows = browser.find_elements("css selector", "#every tbody tr")
        assert len(rows) == len(every_variant(catalog))
    finally:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


SHOTS = {
    "h100-sapphire-rapids": "gpu=sm90&arch=x86_64&cpu=avx%2Bavx2%2Bavx512&branch=cuda-12_9&driver=580.65.06",
    "dgx-spark-on-main": "cc=12.1&arch=aarch64&cpu=armv8_2%2Barmv9&branch=main&driver=580.95.05",
}
SIZES = {"desktop": (1280, 1000), "phone": (390, 844)}


def _whole_page(browser: Any, width: int, path: Path) -> None:
    """A screenshot of the whole page at `width`, not only what the window first shows: the
    window is made as tall as the page."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(width, height + 120)
    browser.save_screenshot(str(path))


def test_screenshots(browser: Any, page_file: Path) -> None:
    """Two selections at desktop and phone widths, written where the run's summary says."""
    folder = screenshot_dir()
    try:
        for size, (width, height) in SIZES.items():
            browser.set_window_size(width, height)
            for name, query in SHOTS.items():
                open_page(browser, page_file, query)
                overflow = browser.execute_script(
                    "return document.documentElement.scrollWidth - window.innerWidth"
                )
                assert overflow <= 0, f"{name} at {size} width scrolls sideways by {overflow}px"
                path = folder / f"{name}-{size}.png"
                _whole_page(browser, width, path)
                browser.set_window_size(width, height)
                assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
                wrote(path)
    finally:
        browser.set_window_size(1280, 1000)
    assert re.search(r"ci-tools-page-screenshots$", str(folder))
