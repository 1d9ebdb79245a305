"""A real browser for the selector page: Debian's chromium driven by Selenium through Debian's
chromium-driver (no browser download). Tests that need it skip, saying why, where it is
missing; `.ci/run` installs both."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import skips
from tests.conftest import DATA, REPO_ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# The flags that run Debian's chromium headless here, offline, with nothing of its own to fetch.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
SCREENSHOTS = Path(os.environ.get("CI_TOOLS_ARTIFACTS") or tempfile.gettempdir()) / (
    "ci-tools-page-screenshots"
)
_written: list[Path] = []


def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def wrote(path: Path) -> None:
    _written.append(path)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _written:
        terminalreporter.write_line(f"page screenshots ({len(_written)}): {SCREENSHOTS}")


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    return skips.missing(CHROMIUM, "chromium") or skips.missing(CHROMEDRIVER, "chromium-driver")


@pytest.fixture(scope="session")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of the shipped catalog, with records of two earlier runs for its sizes."""
    from ci_tools.build import results
    from ci_tools.catalog.load import load_catalog
    from ci_tools.page import site

    catalog = load_catalog(REPO_ROOT / "catalog.yaml", display_name="catalog.yaml")
    records = [
        *results.load_dir(DATA / "results-cuda-12_9"),
        *results.load_dir(DATA / "device-h100"),
    ]
    assert catalog.org is not None
    text = site.make(catalog, catalog.org, records, "2026-11-24")
    path = tmp_path_factory.mktemp("page") / "index.html"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    missing = _missing()
    if missing is not None:
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ci-tools-chromium-")
    options = Options()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(300)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
