"""Nix's parse without a Nix store (`--store dummy://`), with the real `nix-instantiate`.

A store this user cannot open is made with NIX_STATE_DIR: Nix then fails before it reads a
file, as Debian's nix-bin does for any user but root without a daemon ("getting status of
/nix/var/nix/daemon-socket/socket: Permission denied"; as `nobody` on Debian 12, Nix 2.8).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ci_tools.base import nixparse, proc
from ci_tools.catalog import overlays
from ci_tools.plan.nixinputs import NixReader
from tests.nixwrap import nix_wrapper

NIX = shutil.which("nix-instantiate")
pytestmark = pytest.mark.skipif(NIX is None, reason="nix-instantiate (Debian nix-bin) not found")

RECIPE = b"{ pkgs }: pkgs.callPackage ./build.nix { cuda = true; }\n"


@pytest.fixture
def closed_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nix's state folder where nothing can be created: no local store opens."""
    monkeypatch.setenv("NIX_STATE_DIR", "/proc/ci-tools-no-such-state")
    monkeypatch.setitem(nixparse._store, "dummy", True)


def test_the_closed_store_is_real(tmp_path: Path, closed_store: None) -> None:
    """Without `--store dummy://`, this Nix refuses to parse anything: what the tests below
    mend is what the real thing does."""
    (tmp_path / "a.nix").write_bytes(RECIPE)
    plain = proc.run(nixparse.argv(["a.nix"], store=False), cwd=tmp_path, timeout=60)
    assert not plain.ok
    assert "ci-tools-no-such-state" in plain.stderr


def test_a_parse_needs_no_store(tmp_path: Path, closed_store: None) -> None:
    (tmp_path / "a.nix").write_bytes(RECIPE)
    result = nixparse.run(["a.nix"], cwd=tmp_path, timeout=60)
    assert result.ok, result.stderr
    assert str(tmp_path / "build.nix") in result.stdout


def test_fingerprints_are_parsed_where_the_store_is_closed(closed_store: None) -> None:
    read = NixReader().read({"a.nix": RECIPE})["a.nix"]
    assert read.parsed and read.error is None
    assert read.digest.startswith("nix")


def test_overlays_parse_where_the_store_is_closed(tmp_path: Path, closed_store: None) -> None:
    """Before: every overlay "does not parse: error: creating directory ...", and every
    catalog load failed (exit 2)."""
    (tmp_path / "x.nix").write_text("final: prev: { }\n", encoding="utf-8")
    (tmp_path / "bad.nix").write_text("final: prev: { x = ; }\n", encoding="utf-8")
    errors = overlays.parse_errors([tmp_path / "x.nix", tmp_path / "bad.nix"])
    assert list(errors) == ["bad"]
    assert "syntax error" in errors["bad"]


def test_the_dummy_store_prints_the_same_parse(tmp_path: Path) -> None:
    """Fingerprints recorded before (`nix-...` greens) stay valid."""
    (tmp_path / "a.nix").write_bytes(RECIPE + b"# c\n")
    (tmp_path / "b.nix").write_text("let x = <nixpkgs>; in x ./c.nix\n", encoding="utf-8")
    paths = ["a.nix", "b.nix"]
    plain = proc.run(nixparse.argv(paths, store=False), cwd=tmp_path, timeout=60)
    assert plain.ok
    assert nixparse.run(paths, cwd=tmp_path, timeout=60).stdout == plain.stdout


def test_a_nix_without_the_dummy_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Nix that has no such store says so (Nix 2.8's words for an unknown store, as
    `nix-instantiate --store bogus:// --parse` prints them): the parse is asked again
    without it, and no later call asks for it."""
    folder, log = tmp_path / "bin", tmp_path / "calls.log"
    nix_wrapper(folder, log, refuse_dummy_store=True)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setitem(nixparse._store, "dummy", True)
    (tmp_path / "a.nix").write_bytes(RECIPE)
    for _ in range(2):
        result = nixparse.run(["a.nix"], cwd=tmp_path, timeout=60)
        assert result.ok, result.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    assert ["dummy://" in call for call in calls] == [True, False, False]


@pytest.mark.parametrize(
    ("stderr", "refused"),
    [
        ("error: don't know how to open Nix store 'dummy://'", True),
        ("error: don't know how to open Nix store with scheme 'dummy'", True),
        ("error: syntax error, unexpected ';'\n       at /tmp/dummy/a.nix:1:5:", False),
        ("error: getting status of /nix/var/nix/daemon-socket/socket: Permission denied", False),
    ],
)
def test_which_errors_say_the_store_is_missing(stderr: str, refused: bool) -> None:
    assert nixparse.refused_store(stderr) is refused


def test_a_file_that_quotes_the_missing_stores_words_is_no_missing_store(
    tmp_path: Path, closed_store: None
) -> None:
    """Nix 2.8 echoes the line of a syntax error under its message: a file whose refused
    line holds "open Nix store" and "dummy" must not read as a Nix without the dummy store
    (it turned the dummy store off for the process: every later parse then failed where the
    store is closed, and every fingerprint read as raw bytes)."""
    (tmp_path / "a.nix").write_text('{ x = "open Nix store dummy"; y = ; }\n', encoding="utf-8")
    (tmp_path / "b.nix").write_bytes(RECIPE)
    refused = nixparse.run(["a.nix"], cwd=tmp_path, timeout=60)
    assert not refused.ok and "syntax error" in refused.stderr
    assert nixparse._store["dummy"]
    assert nixparse.run(["b.nix"], cwd=tmp_path, timeout=60).ok


def test_the_workflows_matrix_where_the_store_is_closed(tmp_path: Path) -> None:
    """`ci-tools matrix --github-output` as the plan job runs it, where this user cannot
    open Nix's store: before, exit 2 ("overlay ... does not parse: error: creating
    directory ..."); now Nix's fingerprints, with no warning."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "PYTHONPATH": str(REPO_ROOT),
        "NIX_STATE_DIR": "/proc/ci-tools-no-such-state",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
    }
    argv = [sys.executable, "-m", "ci_tools", "matrix", "--branch", "main", "--github-output"]
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    entries = json.loads(done.stdout)["include"]
    assert entries and all(e["fingerprint"].startswith("nix-") for e in entries)


def test_the_doubles_words_are_nixs_own(tmp_path: Path) -> None:
    """The wrapper above refuses the dummy store in the words the real Nix uses for a store
    it does not know, and those words are what `refused_store` recognises."""
    from tests.nixwrap import NO_DUMMY_STORE

    (tmp_path / "a.nix").write_bytes(RECIPE)
    argv = [NIX or "nix-instantiate", "--store", "ci-tools-no-such-store://", "--parse", "a.nix"]
    refused = proc.run(argv, cwd=tmp_path, timeout=60)
    assert not refused.ok
    first = next(line for line in refused.stderr.splitlines() if line.startswith("error:"))
    assert first.replace("ci-tools-no-such-store", "dummy") == NO_DUMMY_STORE
    assert nixparse.refused_store(NO_DUMMY_STORE)
