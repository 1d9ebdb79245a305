"""A parse started early (`NixReader.begin`): it reads as the one `read_many` would have
started, with the real `nix-instantiate`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.base import nixparse
from ci_tools.plan.nixinputs import NixReader
from tests.conftest import REPO_ROOT
from tests.nixwrap import nix_wrapper

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None, reason="nix-instantiate is not installed"
)

FILES = {
    ".flox/pkgs/a.nix": b"{ pkgs }: pkgs.callPackage ../../nix/b.nix { }\n",
    ".flox/pkgs/c.nix": b"# a comment\n{ x }: x ./d.nix\n",
    "nix/b.nix": b'{ stdenv }: stdenv.mkDerivation { name = "b"; src = ./src; }\n',
}
REFUSED = ".flox/pkgs/broken.nix"


def test_an_early_parse_reads_as_a_late_one() -> None:
    early = NixReader()
    early.begin([FILES])
    assert early.parser_calls == 1  # started by `begin`, not by the read
    assert early.read_many([FILES]) == NixReader().read_many([FILES])
    assert early.parser_calls == 1


def test_a_refused_file_in_an_early_parse() -> None:
    """Nix stops at it: the files after it are parsed in one call more, as ever."""
    files = {**FILES, REFUSED: b"{ x = ; }\n", ".flox/pkgs/z.nix": b"{ }: 1\n"}
    early = NixReader()
    early.begin([files])
    assert early.parser_calls == 1
    read = early.read(files)
    assert read == NixReader().read(files)
    assert [p for p, f in read.items() if not f.parsed] == [REFUSED]
    assert read[REFUSED].error is not None and "syntax error" in read[REFUSED].error
    assert early.parser_calls == 2


def test_what_the_early_parse_did_not_cover_is_read_when_asked() -> None:
    early = NixReader()
    early.begin([{p: FILES[p] for p in list(FILES)[:2]}])
    assert early.parser_calls == 1
    assert early.read(FILES) == NixReader().read(FILES)
    assert early.parser_calls == 2  # the early one, and one for nix/b.nix
    assert early.read(FILES) == NixReader().read(FILES)
    assert early.parser_calls == 2  # all of it kept


def test_a_nix_without_the_dummy_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An early parse that Nix refuses for want of the dummy store is asked again without
    it (Nix 2.8's words for a store it does not know)."""
    folder = tmp_path / "bin"
    nix_wrapper(folder, tmp_path / "calls.log", refuse_dummy_store=True)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setitem(nixparse._store, "dummy", True)
    early = NixReader()
    early.begin([FILES])
    read = early.read(FILES)
    assert all(f.parsed for f in read.values())
    assert read == NixReader().read(FILES)


def test_without_nix_nothing_starts() -> None:
    raw = NixReader(use_nix=False)
    raw.begin([FILES])
    assert raw.parser_calls == 0
    assert not any(f.parsed for f in raw.read(FILES).values())


PROBE = """
import json, sys
from ci_tools.plan.nixinputs import NixReader
reader = NixReader()
reader.begin([{"a.nix": b"{ }: 1\\n"}])
print(json.dumps({"folder": reader._pending.folder.name}))
"""


def test_an_early_parse_never_asked_for_leaves_no_files() -> None:
    """A plan that stops before its fingerprints (a catalog that does not load) exits with
    Nix's files removed."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    folder = Path(json.loads(done.stdout)["folder"])
    assert folder.name.startswith("ci-tools-nix-")
    assert not folder.exists()


def test_the_workflows_matrix_parses_its_fingerprints_while_the_catalog_loads(
    tmp_path: Path,
) -> None:
    """`matrix --github-output` (every stack fingerprinted): Nix starts on HEAD's recipes
    before the catalog's overlays are parsed, and that is the fingerprints' only parse."""
    folder, log = tmp_path / "bin", tmp_path / "calls.log"
    nix_wrapper(folder, log)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO_ROOT),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
    }
    argv = [sys.executable, "-m", "ci_tools", "matrix", "--branch", "main", "--github-output"]
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    assert len(calls) == 2, calls
    fingerprints = [c for c in calls if "r0-" in c]
    assert len(fingerprints) == 1 and "/.flox/pkgs/" in fingerprints[0]


def test_the_fingerprints_parse_starts_before_the_catalog_loads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ci_tools import cli
    from ci_tools.base import proc
    from ci_tools.commands import _planning

    events: list[str] = []
    real_start, real_variants = proc.start, _planning.variants

    def recording_start(argv: list[str], **kwargs: object) -> proc.Running:
        events.append(f"start {argv[0]}")
        return real_start(argv, **kwargs)  # type: ignore[arg-type]

    def recording_variants(*args: object, **kwargs: object) -> object:
        events.append("catalog")
        return real_variants(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "start", recording_start)
    monkeypatch.setattr(_planning, "variants", recording_variants)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.chdir(REPO_ROOT)
    assert cli.main(["matrix", "--branch", "main", "--github-output"]) == 0
    capsys.readouterr()
    assert events == ["start nix-instantiate", "catalog"]


def test_a_closed_reader_stops_its_parse_and_removes_its_files() -> None:
    reader = NixReader()
    reader.begin([FILES])
    pending = reader._pending
    assert pending is not None
    reader.close()
    assert pending.started.process.returncode is not None  # reaped, not left running
    assert not Path(pending.folder.name).exists()
    assert reader.read(FILES) == NixReader().read(FILES)  # read when asked, as always


def test_a_plan_that_fails_before_its_fingerprints_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A catalog that does not load (exit 2) after Nix started on HEAD's recipes."""
    from ci_tools import cli
    from ci_tools.plan import nixinputs

    memory = tmp_path / "shm"
    memory.mkdir()
    monkeypatch.setattr(nixinputs, "_MEMORY", memory)
    laid: list[str] = []
    real_lay_out = nixinputs._lay_out

    def recording(todo: list[tuple[str, bytes]]) -> object:
        folder, batch = real_lay_out(todo)
        laid.append(folder.name)
        return folder, batch

    monkeypatch.setattr(nixinputs, "_lay_out", recording)
    broken = tmp_path / "catalog.yaml"
    broken.write_text("branches: [\n", encoding="utf-8")
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    argv = ["matrix", "--catalog", str(broken), "--branch", "main", "--github-output"]
    assert cli.main(argv) == 2
    assert "catalog.yaml" in capsys.readouterr().err
    assert len(laid) == 1 and laid[0].startswith(str(memory))  # Nix was started early
    assert list(memory.iterdir()) == []


def test_an_interrupt_before_the_fingerprints_stops_the_early_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM (cli turns it into an exception) while the catalog loads: the Nix
    started early is stopped and its files removed, as `proc` stops every child it runs."""
    from ci_tools import cli
    from ci_tools.base import proc
    from ci_tools.commands import _planning
    from ci_tools.plan import nixinputs

    folder = tmp_path / "bin"
    folder.mkdir()
    slow = folder / "nix-instantiate"  # the early parse (its files in r0-TAG folders) hangs
    real = shutil.which("nix-instantiate")
    slow.write_text(
        f'#!/bin/sh\ncase "$*" in *r0-*) exec sleep 60;; esac\nexec {real} "$@"\n',
        encoding="utf-8",
    )
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    started: list[proc.Running] = []
    laid: list[str] = []
    real_start, real_lay_out = proc.start, nixinputs._lay_out

    def recording_start(argv: list[str], **kwargs: object) -> proc.Running:
        started.append(real_start(argv, **kwargs))  # type: ignore[arg-type]
        return started[-1]

    def recording_lay_out(todo: list[nixinputs.Version]) -> object:
        made = real_lay_out(todo)
        laid.append(made[0].name)
        return made

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(proc, "start", recording_start)
    monkeypatch.setattr(nixinputs, "_lay_out", recording_lay_out)
    monkeypatch.setattr(_planning, "variants", interrupted)
    monkeypatch.chdir(REPO_ROOT)
    assert cli.main(["matrix", "--branch", "main", "--fingerprints"]) == 130
    assert len(started) == 1 and len(laid) == 1
    assert started[0].process.poll() is not None  # stopped, not left running
    assert not Path(laid[0]).exists()
