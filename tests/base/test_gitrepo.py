"""ci_tools.base.gitrepo: what git prints is read within a bound."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from ci_tools.base import gitrepo, proc
from ci_tools.base.errors import InputError
from tests import gitutil


def _repo(tmp_path: Path) -> gitrepo.GitRepo:
    root = gitutil.init(tmp_path / "repo")
    gitutil.write(root, "a.nix", "x" * 5000)
    gitutil.commit_all(root, "one")
    return gitrepo.GitRepo(root=root)


def test_blobs_over_their_bound_are_refused_not_misread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    blob = repo.tree("HEAD")["a.nix"]
    assert repo.blobs([blob]) == {blob: b"x" * 5000}
    monkeypatch.setattr(gitrepo, "MAX_BLOBS_BYTES", 1000)
    with pytest.raises(InputError, match="hold over 1000 bytes"):
        gitrepo.GitRepo(root=repo.root).blobs([blob])  # a repository that read none yet


def test_a_blob_read_once_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    blob = repo.tree("HEAD")["a.nix"]
    calls: list[list[str]] = []
    real = proc.run_bytes

    def counting(argv: list[str], **kwargs: object) -> proc.BytesResult:
        calls.append(argv)
        return real(argv, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "run_bytes", counting)
    assert repo.blobs([blob]) == repo.blobs([blob, blob]) == {blob: b"x" * 5000}
    assert calls == [["git", "cat-file", "--batch"]]


def test_a_cut_answer_from_git_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    monkeypatch.setattr(proc, "MAX_OUTPUT", 10)
    with pytest.raises(InputError, match="printed over 10 bytes"):
        repo.tree("HEAD")


def test_the_working_tree_stands_in_for_git_only_where_it_holds_the_committed_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gitutil.init(tmp_path / "repo")
    gitutil.write(root, "same.nix", "{ }: 1\n")
    gitutil.write(root, "edited.nix", "{ }: 2\n")
    gitutil.write(root, "gone.nix", "{ }: 3\n")
    gitutil.commit_all(root, "one")
    gitutil.write(root, "edited.nix", "{ }: uncommitted\n")
    (root / "gone.nix").unlink()
    repo = gitrepo.GitRepo(root=root)
    files = repo.tree("HEAD")
    calls: list[bytes] = []
    real = proc.run_bytes

    def counting(argv: list[str], **kwargs: Any) -> proc.BytesResult:
        calls.append(kwargs["stdin"])
        return real(argv, **kwargs)

    monkeypatch.setattr(proc, "run_bytes", counting)
    repo.read_worktree(files)
    got = repo.blobs(list(files.values()))
    # What is read is what is committed; git is asked only for what the disk does not hold.
    assert {path: got[blob] for path, blob in files.items()} == {
        "same.nix": b"{ }: 1\n",
        "edited.nix": b"{ }: 2\n",
        "gone.nix": b"{ }: 3\n",
    }
    assert len(calls) == 1 and files["same.nix"].encode() not in calls[0]
    assert files["edited.nix"].encode() in calls[0] and files["gone.nix"].encode() in calls[0]


def test_a_fifo_or_link_in_the_working_tree_is_read_from_git_not_opened(tmp_path: Path) -> None:
    """An uncommitted change put a link to a FIFO where a recipe was: opening it would wait
    for a writer for ever; it is left to git."""
    root = gitutil.init(tmp_path / "repo")
    gitutil.write(root, "fifo.nix", "{ }: 1\n")
    gitutil.write(root, "link.nix", "{ }: 2\n")
    gitutil.commit_all(root, "one")
    (root / "fifo.nix").unlink()
    os.mkfifo(root / "fifo.nix")
    (root / "link.nix").unlink()
    (root / "target.nix").write_text("{ }: 2\n", encoding="utf-8")
    (root / "link.nix").symlink_to("target.nix")
    repo = gitrepo.GitRepo(root=root)
    files = repo.tree("HEAD")
    reader = threading.Thread(target=repo.read_worktree, args=(files,), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "read_worktree waits on the FIFO"
    assert files["link.nix"] not in repo._read  # a link is not followed
    assert repo.blobs(list(files.values())) == {
        files["fifo.nix"]: b"{ }: 1\n",
        files["link.nix"]: b"{ }: 2\n",
    }
