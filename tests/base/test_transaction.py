"""ci_tools.base.transaction: a journal is obeyed only if a run on this machine wrote it, and
only inside its roots (issue 20 items 1 and 2)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from ci_tools.base import transaction
from ci_tools.base.errors import InputError


def _checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout with an output folder, and a folder outside it with a file to protect."""
    out = tmp_path / "repo" / ".flox" / "pkgs"
    out.mkdir(parents=True)
    (tmp_path / "repo" / ".git" / "hooks").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me\n", encoding="utf-8")
    return out, outside


def _plant(out: Path, outside: Path, **extra: object) -> Path:
    """What the audit committed to a branch: a staging folder whose journal writes a git hook
    and a file outside the checkout, and deletes another."""
    staging = out / transaction.STAGING
    staging.mkdir()
    (staging / "0.new").write_text("#!/bin/sh\ntouch /tmp/pwned\n", encoding="utf-8")
    (staging / "1.new").write_text("planted\n", encoding="utf-8")
    journal = {
        "writes": [["0.new", "../../.git/hooks/pre-commit"], ["1.new", str(outside / "new")]],
        "deletes": [str(outside / "precious"), "../../README.md"],
        **extra,
    }
    (staging / "journal.json").write_text(json.dumps(journal), encoding="utf-8")
    return staging


@pytest.mark.parametrize(
    "extra",
    [{}, {"nonce": secrets.token_hex(16)}, {"nonce": "../../../../etc/passwd"}],
    ids=["no-nonce", "forged-nonce", "nonce-as-path"],
)
def test_a_committed_journal_is_removed_unread(tmp_path: Path, extra: dict[str, str]) -> None:
    out, outside = _checkout(tmp_path)
    (tmp_path / "repo" / "README.md").write_text("readme\n", encoding="utf-8")
    staging = _plant(out, outside, **extra)
    done = transaction.Transaction(out, roots=(tmp_path / "repo",)).recover()
    assert done == [
        f"removed {staging} without obeying its journal: no ci-tools run on this machine wrote "
        "it (was it committed to the repository?)"
    ]
    assert not (tmp_path / "repo" / ".git" / "hooks" / "pre-commit").exists()
    assert (outside / "precious").read_text(encoding="utf-8") == "keep me\n"
    assert not (outside / "new").exists()
    assert (tmp_path / "repo" / "README.md").exists()
    assert not staging.exists()


def test_a_witnessed_journal_is_still_confined_to_its_roots(tmp_path: Path) -> None:
    """Even a journal this machine's run wrote renames and deletes nothing outside the roots
    (a folder on its way may have become a link since)."""
    out, outside = _checkout(tmp_path)
    nonce = secrets.token_hex(16)
    staging = _plant(out, outside, nonce=nonce)
    witness = transaction.witness_dir() / nonce
    witness.parent.mkdir(parents=True, exist_ok=True)
    witness.write_text(str(staging.resolve()), encoding="utf-8")
    transaction.Transaction(out).recover()
    assert (outside / "precious").read_text(encoding="utf-8") == "keep me\n"
    assert not (tmp_path / "repo" / ".git" / "hooks" / "pre-commit").exists()
    assert not staging.exists()


def test_a_witness_names_the_one_staging_folder_it_was_written_for(tmp_path: Path) -> None:
    """A copy of a real journal (and its staging) in another folder is not obeyed there."""
    out, _ = _checkout(tmp_path)
    nonce = secrets.token_hex(16)
    staging = out / transaction.STAGING
    staging.mkdir()
    (staging / "0.new").write_text("x\n", encoding="utf-8")
    journal = {"nonce": nonce, "writes": [["0.new", "a.nix"]], "deletes": []}
    (staging / "journal.json").write_text(json.dumps(journal), encoding="utf-8")
    witness = transaction.witness_dir() / nonce
    witness.parent.mkdir(parents=True, exist_ok=True)
    witness.write_text(str(tmp_path / "elsewhere" / transaction.STAGING), encoding="utf-8")
    transaction.Transaction(out).recover()
    assert not (out / "a.nix").exists()


def test_a_staging_folder_that_is_a_link_is_removed_never_followed(tmp_path: Path) -> None:
    out, outside = _checkout(tmp_path)
    (outside / "staging").mkdir()
    (out / transaction.STAGING).symlink_to(outside / "staging")
    transaction.Transaction(out).recover()  # the link itself is removed, never followed
    assert (outside / "staging").is_dir()
    assert not (out / transaction.STAGING).is_symlink()


def test_writes_through_a_folder_link_out_are_refused_before_anything_changes(
    tmp_path: Path,
) -> None:
    out, outside = _checkout(tmp_path)
    (out / "lib").symlink_to(outside)
    (out / "a.nix").write_text("old\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"lib/precious: leads to"):
        transaction.Transaction(out).run([(out / "a.nix", "new\n")], [out / "lib" / "precious"])
    assert (out / "a.nix").read_text(encoding="utf-8") == "old\n"
    assert (outside / "precious").exists()
    assert not (out / transaction.STAGING).exists()


def test_a_journal_that_is_a_device_is_not_read(tmp_path: Path) -> None:
    out, _ = _checkout(tmp_path)
    (out / transaction.STAGING).mkdir()
    (out / transaction.STAGING / "journal.json").symlink_to("/dev/zero")
    assert "without obeying" in transaction.Transaction(out).recover()[0]


def test_the_witness_folder_is_outside_any_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    assert transaction.witness_dir({"XDG_STATE_HOME": "/s"}) == Path("/s/ci-tools/journals")
    monkeypatch.setenv("HOME", "/h")
    assert transaction.witness_dir({"XDG_STATE_HOME": "rel"}) == Path(
        "/h/.local/state/ci-tools/journals"
    )
