"""ci_tools.render.generated: comparing a rendering with the disk, writing, pruning, refusing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.base import transaction
from ci_tools.base.errors import InputError
from ci_tools.render import generated, recipes
from ci_tools.render.recipes import RenderedFile

HEADER = recipes.header("catalog.yaml", "main")


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


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_generated_files_below_the_write_folders_are_never_deleted(tmp_path: Path) -> None:
    """Issue 12 item 2: `--out .` deleted generated .nix files at any depth (tests/golden...)."""
    (tmp_path / "tests" / "golden").mkdir(parents=True)
    kept = tmp_path / "tests" / "golden" / "recipe.nix"
    kept.write_text(f"{HEADER}\ngolden\n", encoding="utf-8")
    (tmp_path / "stale.nix").write_text(f"{HEADER}\nstale\n", encoding="utf-8")
    plan = generated.plan(tmp_path, [_file("a.nix", "a"), _file("lib/b.nix", "b")])
    assert plan.extra == ("stale.nix",)
    generated.apply(plan)
    assert kept.read_text(encoding="utf-8") == f"{HEADER}\ngolden\n"
    assert not (tmp_path / "stale.nix").exists()


def test_a_failure_while_staging_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12 item 3: a failure half-way left 26 recipes rewritten and 19 stale."""
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.nix").write_text(f"{HEADER}\nold {name}\n", encoding="utf-8")
    (tmp_path / "gone.nix").write_text(f"{HEADER}\ngone\n", encoding="utf-8")
    before = _tree(tmp_path)
    calls = []
    real = transaction._write_synced

    def failing(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(transaction, "_write_synced", failing)
    plan = generated.plan(tmp_path, [_file(f"{n}.nix", f"new {n}") for n in ("a", "b", "c")])
    with pytest.raises(OSError, match="No space"):
        generated.apply(plan)
    assert _tree(tmp_path) == before
    assert not (tmp_path / transaction.STAGING).exists()


def test_a_lone_surrogate_fails_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "a.nix").write_text(f"{HEADER}\nold\n", encoding="utf-8")
    before = _tree(tmp_path)
    plan = generated.plan(tmp_path, [_file("a.nix", "new"), _file("b.nix", "\ud83d")])
    with pytest.raises(InputError, match="UTF-8"):
        generated.apply(plan)
    assert _tree(tmp_path) == before


def test_an_uncommitted_staging_folder_is_reported_then_removed(tmp_path: Path) -> None:
    (tmp_path / "a.nix").write_text(f"{HEADER}\nold\n", encoding="utf-8")
    staging = tmp_path / transaction.STAGING
    staging.mkdir()
    (staging / "0.new").write_text("half", encoding="utf-8")
    (tmp_path / ".a.nix.abcd1234.tmp").write_text("half", encoding="utf-8")
    files = [_file("a.nix", "old")]
    plan = generated.plan(tmp_path, files)
    assert not plan.current
    assert sorted(Path(p).name for p in plan.leftovers) == [
        ".a.nix.abcd1234.tmp",
        transaction.STAGING,
    ]
    done = generated.recover(tmp_path, files, [tmp_path])
    assert len(done) == 2
    generated.apply(plan)
    assert _tree(tmp_path) == {"a.nix": f"{HEADER}\nold\n".encode()}
    assert generated.plan(tmp_path, files).current


def _killed_after_the_first_rename(
    root: Path, files: list[RenderedFile], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leave what a run killed right after its first rename leaves: a committed journal (and
    its witness), the first file new, the rest still staged."""
    real = Path.replace
    calls = []

    def replace(self: Path, target: Path) -> Path:
        calls.append(target)
        if len(calls) == 3:  # 1: the journal's commit, 2: the first file
            raise KeyboardInterrupt
        return real(self, target)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "replace", replace)
        with pytest.raises(KeyboardInterrupt):
            generated.apply(generated.plan(root, files))


def test_a_committed_journal_is_finished_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.nix").write_text(f"{HEADER}\nold {name}\n", encoding="utf-8")
    (tmp_path / "gone.nix").write_text(f"{HEADER}\ngone\n", encoding="utf-8")
    files = [_file("a.nix", "new a"), _file("b.nix", "new b")]
    _killed_after_the_first_rename(tmp_path, files, monkeypatch)
    assert (tmp_path / "a.nix").read_text(encoding="utf-8") == files[0].text
    assert (tmp_path / "b.nix").read_text(encoding="utf-8") == f"{HEADER}\nold b\n"
    assert transaction.Transaction(tmp_path).recover() == [
        "finished an interrupted generate (3 files)"
    ]
    assert _tree(tmp_path) == {f.path: f.text.encode() for f in files}
    assert not list(transaction.witness_dir().iterdir())


def test_an_unwritable_folder_is_refused_before_anything_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 13: a read-only --out was a traceback. (Simulated: root may write anywhere.)"""
    (tmp_path / "a.nix").write_text(f"{HEADER}\nold\n", encoding="utf-8")
    before = _tree(tmp_path)
    monkeypatch.setattr(transaction.os, "access", lambda path, mode: False)
    with pytest.raises(InputError, match="cannot be written"):
        generated.apply(generated.plan(tmp_path, [_file("a.nix", "new"), _file("lib/b.nix", "b")]))
    assert _tree(tmp_path) == before


def test_a_file_where_a_folder_must_be_is_refused_before_anything_changes(tmp_path: Path) -> None:
    (tmp_path / "a.nix").write_text(f"{HEADER}\nold\n", encoding="utf-8")
    (tmp_path / "lib").write_text("a file\n", encoding="utf-8")
    before = _tree(tmp_path)
    with pytest.raises(InputError, match=r"lib/b\.nix"):
        generated.apply(generated.plan(tmp_path, [_file("a.nix", "new"), _file("lib/b.nix", "b")]))
    assert _tree(tmp_path) == before
