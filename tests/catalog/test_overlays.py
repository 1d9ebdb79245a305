"""ci_tools.catalog.overlays: every overlay a catalog names exists and parses, checked with one
`nix-instantiate --parse` for all of them (every catalog load pays for it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci_tools.catalog import overlays
from tests.nixwrap import nix_wrapper

NIX = shutil.which("nix-instantiate")
pytestmark = pytest.mark.skipif(NIX is None, reason="nix-instantiate (Debian nix-bin) not found")


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real nix-instantiate behind a wrapper on PATH that logs each call's arguments."""
    folder, log = tmp_path / "bin", tmp_path / "calls.log"
    nix_wrapper(folder, log)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    return log


def _files(folder: Path, texts: dict[str, str]) -> list[Path]:
    folder.mkdir()
    paths = []
    for name, text in texts.items():
        (folder / f"{name}.nix").write_text(text, encoding="utf-8")
        paths.append(folder / f"{name}.nix")
    return paths


def test_all_overlays_are_parsed_in_one_call(tmp_path: Path, calls: Path) -> None:
    paths = _files(tmp_path / "a", {n: "final: prev: { }\n" for n in ("x", "y", "z")})
    assert overlays.parse_errors(paths) == {}
    assert len(calls.read_text(encoding="utf-8").splitlines()) == 1
    # The same file versions again (a second catalog load in one process): no call.
    assert overlays.parse_errors(paths) == {}
    assert len(calls.read_text(encoding="utf-8").splitlines()) == 1


def test_each_overlay_that_does_not_parse_is_named(tmp_path: Path, calls: Path) -> None:
    paths = _files(
        tmp_path / "b",
        {"good": "final: prev: { }\n", "bad": "final: prev: { x = ; }\n", "worse": "{\n"},
    )
    errors = overlays.parse_errors(paths)
    assert sorted(errors) == ["bad", "worse"]
    assert "syntax error" in errors["bad"] and "bad.nix" in errors["bad"]
    # Nix stops at the first error: one call for all, then one per file to name each.
    assert len(calls.read_text(encoding="utf-8").splitlines()) == 1 + len(paths)


def test_a_changed_file_is_parsed_again(tmp_path: Path, calls: Path) -> None:
    (path,) = _files(tmp_path / "c", {"x": "final: prev: { }\n"})
    assert overlays.parse_errors([path]) == {}
    path.write_text("final: prev: { x = ; }\n# longer now\n", encoding="utf-8")
    assert list(overlays.parse_errors([path])) == ["x"]


def test_without_nix_only_existence_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (path,) = _files(tmp_path / "d", {"x": "not nix at all (\n"})
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert overlays.parse_errors([path]) == {}


def test_a_prefetch_of_every_overlay_answers_for_those_used(tmp_path: Path, calls: Path) -> None:
    """`load_catalog` starts the parse of every overlay before it reads the YAML: when they
    all parse, the check of those the catalog names costs no call of its own."""
    (tmp_path / "nix").mkdir()
    paths = _files(tmp_path / "nix" / "overlays", {n: "final: prev: { }\n" for n in "xyz"})
    overlays.prefetch(tmp_path)
    assert overlays.parse_errors(paths[:2]) == {}
    assert len(calls.read_text(encoding="utf-8").splitlines()) == 1


def test_an_unused_overlay_that_does_not_parse_is_no_error(tmp_path: Path, calls: Path) -> None:
    (tmp_path / "nix").mkdir()
    texts = {"good": "final: prev: { }\n", "unused": "final: prev: { x = ; }\n"}
    good, _ = _files(tmp_path / "nix" / "overlays", texts)
    overlays.prefetch(tmp_path)
    assert overlays.parse_errors([good]) == {}
    # The prefetch failed (Nix stops at the first error): the used ones are parsed alone.
    assert len(calls.read_text(encoding="utf-8").splitlines()) == 2
