"""ci-tools.yaml: optional, small, and checked like the catalog (file:line, all at once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.base.errors import SourceError
from ci_tools.catalog.settings import Settings, load_settings


def _load(tmp_path: Path, text: str) -> Settings:
    (tmp_path / "ci-tools.yaml").write_text(text, encoding="utf-8")
    return load_settings(tmp_path)


def test_absent_or_empty_is_no_settings(tmp_path: Path) -> None:
    assert load_settings(tmp_path) == Settings()
    assert _load(tmp_path, "# nothing yet\n") == Settings(display_name="ci-tools.yaml")


def test_a_whole_file(tmp_path: Path) -> None:
    found = _load(
        tmp_path,
        'ignore: ["*.nix.backup", lib]\nbuilds: [cu128]\n'
        'branches:\n  main: {}\n  pytorch-2.9-python313:\n    versions: {pytorch: "2.9.1"}\n',
    )
    assert found.builds == ("nightly", "magma", "cu128")
    assert dict(found.branches) == {"main": {}, "pytorch-2.9-python313": {"pytorch": "2.9.1"}}
    assert found.ignores("pytorch-python313-cpu-avx2.nix.backup")
    assert found.ignores("lib/torch-cuda.nix")  # a folder, by its name
    assert not found.ignores("pytorch-python313-cpu-avx2.nix")


def test_org_and_least_drivers_per_toolkit_and_per_branch(tmp_path: Path) -> None:
    """Issue 30 item 3: what a catalog-less repository knows; the old file refused `org`."""
    found = _load(
        tmp_path,
        "org: acme\nmin_driver: {cuda12_8: 570, cuda13_0: 580}\n"
        "branches:\n  old:\n    min_driver: 550\n  main: {}\n",
    )
    assert found.org == "acme"
    assert found.driver_of("main", "cuda12_8") == 570
    assert found.driver_of("main", "cuda13_0") == 580
    assert found.driver_of("old", "cuda13_0") == 550  # the branch's own wins
    assert found.driver_of("main", "cuda12_9") is None  # unknown, never 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "ignor: []\n",
            'ci-tools.yaml:1: unknown key "ignor" in the settings (did you mean "ignore"?)',
        ),
        ("ignore: [a b]\n", 'ci-tools.yaml:1: ignore: "a b" is not a path glob'),
        ("builds: [Nightly]\n", 'ci-tools.yaml:1: builds: "Nightly" is not a build suffix'),
        (
            'branches:\n  main:\n    versions: {pytorh: "2.9.1"}\n',
            'ci-tools.yaml:3: main.versions: unknown package "pytorh" (did you mean "pytorch"?)',
        ),
        ("branches:\n  main:\n    versions: {pytorch: 2.10}\n", "ci-tools.yaml:3"),
        ('org: "a b"\n', 'ci-tools.yaml:1: org "a b" is not a Flox organisation'),
        (
            "min_driver: {cuda12_8: 0}\n",
            "ci-tools.yaml:1: min_driver.cuda12_8 must be a whole number from 1 to 9999",
        ),
        ("min_driver: {cuda12: 570}\n", 'ci-tools.yaml:1: min_driver: "cuda12" is not a toolkit'),
        (
            'branches:\n  main:\n    min_driver: "570"\n',
            "ci-tools.yaml:3: branches.main.min_driver must be a whole number",
        ),
    ],
)
def test_mistakes_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SourceError) as caught:
        _load(tmp_path, text)
    assert str(caught.value).startswith(message), str(caught.value)
