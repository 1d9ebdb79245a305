"""The release notes as Markdown (`ci_tools.ship.notes`)."""

from __future__ import annotations

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
