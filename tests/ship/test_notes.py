"""The release notes as Markdown (`ci_tools.ship.notes`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jinja2
import pytest

from ci_tools.base.errors import InputError
from ci_tools.catalog.model import Catalog
from ci_tools.ship import notes as notes_text
from tests.ship.test_release import _check_golden, _notes


def test_notes_render_golden(catalog: Catalog, repo_root: Path) -> None:
    notes, _ = _notes(catalog)
    text = notes_text.render_notes(notes, repo_root / "templates")
    assert "| PyTorch | 2.9.1 |" in text
    assert "| TorchVision | 0.24.0 |" in text
    assert "| CUDA | 12.9.1 |" in text
    _check_golden("release-notes-cuda-12_9.md", text)


def test_without_a_template_of_its_own_a_repository_gets_ci_tools_one(
    catalog: Catalog, tmp_path: Path
) -> None:
    notes, _ = _notes(catalog)
    assert notes_text.render_notes(notes, tmp_path) == notes_text.render_notes(
        notes, Path(notes_text.__file__).parent / "templates"
    )
    (tmp_path / "release-notes.md.j2").write_text("{{ notes.tag }} ours\n", encoding="utf-8")
    assert notes_text.render_notes(notes, tmp_path) == f"{notes.tag} ours\n"


def test_a_missing_packaged_template_is_bad_input(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes, _ = _notes(catalog)
    gone = jinja2.FileSystemLoader(tmp_path / "gone")
    monkeypatch.setattr(notes_text.packaged, "loader", lambda *_: gone)
    with pytest.raises(InputError, match=r"release notes template is missing"):
        notes_text.render_notes(notes, tmp_path)


def test_notes_are_for_the_people_who_install(catalog: Catalog, tmp_path: Path) -> None:
    """Issue 30 item 5: the least driver per toolkit, the page and `detect`, an install line
    per variant, and a count for what was not selected (there were 87 rows of it)."""
    notes, _ = _notes(catalog)
    notes = dataclasses.replace(notes, page_url="https://acme.github.io/torch-builds/")
    text = notes_text.render_notes(notes, tmp_path)
    assert "selector page: https://acme.github.io/torch-builds/" in text
    assert "`ci-tools detect --branch cuda-12_9`" in text
    assert "| 12.9 | 575 |" in text
    assert (
        "| `pytorch-python313-cuda12_9-sm90-avx512` | x86_64-linux | "
        "`flox install acme/pytorch-python313-cuda12_9-sm90-avx512` |"
    ) in text
    assert "| not selected |" not in text
    unselected = sum(row.outcome == "not selected" for row in notes.rows)
    assert unselected > 40
    assert f"{unselected} more variants of `cuda-12_9` were not selected in this run" in text


def test_an_unknown_driver_is_said_in_words(catalog: Catalog, tmp_path: Path) -> None:
    notes, _ = _notes(catalog)
    notes = dataclasses.replace(notes, drivers=(("12.8", None),))
    text = notes_text.render_notes(notes, tmp_path)
    assert "| 12.8 | unknown (the repository states none) |" in text
    assert "None" not in text


@pytest.mark.parametrize(
    ("repository", "url"),
    [
        ("acme/torch-builds", "https://acme.github.io/torch-builds/"),
        ("Acme/acme.github.io", "https://acme.github.io/"),
        ("", None),
        ("acme/x y", None),
        ("-acme/x", None),
    ],
)
def test_the_page_is_the_repositorys_github_pages_site(repository: str, url: str | None) -> None:
    assert notes_text.page_url({"GITHUB_REPOSITORY": repository}) == url
