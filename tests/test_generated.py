"""ci_tools.generated: comparing a rendering with the disk, writing, pruning, refusing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools import generated, render
from ci_tools.errors import InputError
from ci_tools.render import RenderedFile

HEADER = render.header("catalog.yaml", "main")


def _file(path: str, body: str) -> RenderedFile:
    return RenderedFile(path=path, text=f"{HEADER}\n{body}\n")


def test_plan_sorts_files_into_their_states(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "same.nix").write_text(f"{HEADER}\nsame\n", encoding="utf-8")
    (tmp_path / "old.nix").write_text(f"{HEADER}\nold\n", encoding="utf-8")
    (tmp_path / "mine.nix").write_text("hand written\n", encoding="utf-8")
    (tmp_path / "lib" / "gone.nix").write_text(f"{HEADER}\ngone\n", encoding="utf-8")
    (tmp_path / "other.nix").write_text("not ours, not wanted\n", encoding="utf-8")
    files = [
        _file("same.nix", "same"),
        _file("old.nix", "new"),
        _file("mine.nix", "x"),
        _file("lib/new.nix", "new"),
    ]

    plan = generated.plan(tmp_path, files)
    assert [f.path for f in plan.missing] == ["lib/new.nix"]
    assert [f.path for f in plan.stale] == ["old.nix"]
    assert plan.foreign == ("mine.nix",)
    assert plan.extra == ("lib/gone.nix",)
    assert plan.unchanged == 1
    assert not plan.current


def test_apply_refuses_when_a_file_is_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "mine.nix").write_text("hand written\n", encoding="utf-8")
    plan = generated.plan(tmp_path, [_file("mine.nix", "x"), _file("new.nix", "y")])
    with pytest.raises(InputError, match=r"mine\.nix"):
        generated.apply(plan)
    assert not (tmp_path / "new.nix").exists()
    assert (tmp_path / "mine.nix").read_text(encoding="utf-8") == "hand written\n"


def test_apply_writes_and_prunes_then_the_plan_is_current(tmp_path: Path) -> None:
    out = tmp_path / "does" / "not" / "exist"
    files = [_file("a.nix", "a"), _file("lib/b.nix", "b")]
    generated.apply(generated.plan(out, files))
    (out / "gone.nix").write_text(f"{HEADER}\n", encoding="utf-8")
    generated.apply(generated.plan(out, files))
    assert not (out / "gone.nix").exists()
    plan = generated.plan(out, files)
    assert plan.current and plan.unchanged == 2
