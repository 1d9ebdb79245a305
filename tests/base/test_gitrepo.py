"""ci_tools.base.gitrepo: what git prints is read within a bound."""

from __future__ import annotations

from pathlib import Path

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
