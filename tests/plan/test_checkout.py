"""The build repository as ci-tools reads it: in git or not, asked only when needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ci_tools.base import proc
from ci_tools.plan.checkout import Checkout
from tests.gitutil import commit_all, init, write


def test_git_is_asked_only_when_something_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = init(tmp_path / "repo")
    write(root, "a.nix", "1\n")
    commit_all(root, "a")
    calls: list[list[str]] = []
    real_run = proc.run

    def counting(argv: list[str], **kwargs: Any) -> proc.CommandResult:
        calls.append(list(argv))
        return real_run(argv, **kwargs)

    monkeypatch.setattr(proc, "run", counting)
    checkout = Checkout(root=root)
    assert calls == []
    assert checkout.git is not None and checkout.prefix == ""
    assert len(calls) == 1  # one `git rev-parse` for where it stands, however often asked
    assert checkout.head is checkout.head
    assert set(checkout.head.files) == {"a.nix"}
    assert len(calls) == 2  # and one `git ls-tree` for HEAD's tree


def test_a_folder_inside_git_reads_its_own_files(tmp_path: Path) -> None:
    top = init(tmp_path / "top")
    write(top, "builds/.flox/pkgs/x.nix", "1\n")
    write(top, "elsewhere.txt", "no\n")
    commit_all(top, "files")
    checkout = Checkout(root=top / "builds")
    assert checkout.prefix == "builds/"
    assert set(checkout.head.files) == {".flox/pkgs/x.nix"}
    assert checkout.path_in_git(top / "builds" / "catalog.yaml") == "builds/catalog.yaml"


def test_outside_git_or_before_a_commit_it_is_a_folder(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    write(plain, "x.nix", "1\n")
    assert Checkout(root=plain).git is None
    assert set(Checkout(root=plain).head.files) == {"x.nix"}
    empty = init(tmp_path / "empty")
    write(empty, "y.nix", "1\n")
    checkout = Checkout(root=empty)
    assert checkout.git is None
    assert checkout.path_in_git(empty / "y.nix") is None
    assert set(checkout.head.files) == {"y.nix"}
