"""The command line: exit codes, clean errors, GitHub annotations, lazy imports."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ci_tools import cli
from ci_tools.base import errors
from tests.conftest import REPO_ROOT, CliRunner


def test_every_command_has_help(run_cli: CliRunner) -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in cli.COMMANDS:
        assert command in result.stdout


def test_unknown_command_is_exit_2(run_cli: CliRunner) -> None:
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def _broken_catalog(tmp_path: Path) -> Path:
    text = (REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    text = text.replace("    min_driver: 570", "    min_drivr: 570")
    path = tmp_path / "catalog.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_catalog_error_is_exit_2_without_traceback(run_cli: CliRunner, tmp_path: Path) -> None:
    _broken_catalog(tmp_path)
    result = run_cli("matrix", "--branch", "main", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "catalog.yaml:" in result.stderr and 'unknown key "min_drivr"' in result.stderr
    assert "::error" not in result.stdout


def test_catalog_error_is_annotated_under_github_actions(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    _broken_catalog(tmp_path)
    result = run_cli("matrix", "--branch", "main", cwd=tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 2
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert annotations
    assert all(line.startswith("::error file=catalog.yaml,line=") for line in annotations)


def test_annotation_escaping() -> None:
    assert errors.escape_data("50%\nnext") == "50%25%0Anext"
    assert errors.escape_property("a:b,c") == "a%3Ab%2Cc"


def _is_workflow_command(line: str) -> bool:
    """As the runner reads a log line (actions/runner ActionCommand.cs TryParseV2/TryParse)."""
    return line.lstrip().startswith("::") or "##[" in line


def test_catalog_text_cannot_emit_workflow_commands(run_cli: CliRunner, tmp_path: Path) -> None:
    """Issue 12 item 12: a catalog key or value quoted in an error is never a command."""
    shutil.copy(REPO_ROOT / "catalog.yaml", tmp_path / "catalog.yaml")
    text = (tmp_path / "catalog.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "  avx2:\n",
        '  "x\\n::add-mask::secret\\n##[warning]v1":\n    level: 1\n'
        '  "\\n  ::warning::indented":\n    level: 1\n  avx2:\n',
        1,
    )
    (tmp_path / "catalog.yaml").write_text(text, encoding="utf-8")
    result = run_cli("matrix", "--branch", "main", cwd=tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 2, result.stderr
    assert "add-mask" in result.stderr and "warning" in result.stderr  # quoted, not obeyed
    lines = (result.stdout + result.stderr).splitlines()
    commands = [line for line in lines if _is_workflow_command(line)]
    assert commands, "the problems are still annotated"
    for line in commands:
        assert line.startswith("::error file=catalog.yaml,line="), line
        assert "::add-mask::" not in line.split("::", 2)[1]
        assert "##[" not in line


def test_every_error_line_is_escaped_under_github_actions() -> None:
    lines = errors.log_lines(
        "ci-tools: error: ", "one\n  ::add-mask::x\n##[group]y", in_actions=True
    )
    assert not any(_is_workflow_command(line) for line in lines)


def test_parser_imports_only_the_chosen_command() -> None:
    # A fresh interpreter: in this one, other tests may have imported every command already.
    probe = (
        "import sys; from ci_tools import cli; cli.build_parser('generate'); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('ci_tools.commands.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(done.stdout.split())
    assert "ci_tools.commands.generate" in loaded
    assert not loaded & {"ci_tools.commands.publish", "ci_tools.commands.release"}


HUGE = "x" * 100_000
NEAR_LIMIT = "y" * cli.MAX_ARGUMENT


@pytest.mark.parametrize(
    "argv",
    [
        ["matrix", "--branch", HUGE],
        ["matrix", "--select", HUGE],
        ["build", HUGE],
        ["report", HUGE],
        ["detect", "--gpu-cc", HUGE],
        ["generate", "--out", HUGE],
        ["matrix", "--branch", NEAR_LIMIT],
        ["build", NEAR_LIMIT],
        ["matrix", "--since", NEAR_LIMIT],
        ["detect", "--gpu-cc", NEAR_LIMIT],
    ],
    ids=lambda argv: f"{argv[0]}-{argv[-2]}-{len(argv[-1])}",
)
def test_a_huge_argument_is_never_echoed_back_whole(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 item 12: huge arguments were echoed back in full."""
    monkeypatch.chdir(REPO_ROOT)
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code  # type: ignore[assignment]
    said = capsys.readouterr()
    assert code == 2 or argv[1] == "--since"
    assert len(said.err) < 3000, said.err[:300]
    if len(argv[-1]) > cli.MAX_ARGUMENT:
        assert f"a value of {len(argv[-1])} characters" in said.err


@pytest.mark.parametrize("in_actions", ["true", ""])
def test_an_error_quoting_a_huge_input_is_cut(
    in_actions: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", in_actions)
    cli._report(errors.InputError(f"{'p' * 100_000}: not a result record\nsecond line"))
    said = capsys.readouterr()
    assert len(said.err) + len(said.out) < 4000
    assert "characters cut]" in said.err and "second line" in said.err


# Less than stdout's buffer (written at the last flush), and more (written while it runs).
@pytest.mark.parametrize(
    "selection", [["--select", "pytorch-python313-cpu-avx2"], ["--group", "none"]]
)
def test_a_reader_that_closes_the_pipe_ends_it_quietly(
    selection: list[str], tmp_path: Path
) -> None:
    """`ci-tools matrix | head`: the reader chose to stop; ci-tools printed "error: Broken
    pipe" and exited 1. Now it says nothing and exits as a writer killed by SIGPIPE (141)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before a byte is written
    argv = [sys.executable, "-m", "ci_tools", "matrix", "--catalog",
            str(REPO_ROOT / "catalog.yaml"), "--branch", "main", *selection]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    try:
        done = subprocess.run(
            argv, cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, text=True, env=env
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (128 + signal.SIGPIPE, "")
    full = subprocess.run(argv, cwd=tmp_path, capture_output=True, env=env, check=True)
    assert (len(full.stdout) > 8192) == ("none" in selection)  # io.DEFAULT_BUFFER_SIZE


def test_sigterm_stops_the_child_and_exits_143_with_a_message(tmp_path: Path) -> None:
    """Issue 20 item 12: SIGTERM (a cancelled job) exited silently."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    flox = bindir / "flox"
    flox.write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid()))\n"
        "print('building', flush=True)\ntime.sleep(120)\n",
        encoding="utf-8",
    )
    flox.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PATH": f"{bindir}:{os.environ['PATH']}"}
    argv = [sys.executable, "-m", "ci_tools", "build", "--catalog", str(REPO_ROOT / "catalog.yaml"),
            "--branch", "main", "pytorch-python313-cpu-avx2", "--results", str(tmp_path / "out")]  # fmt: skip
    with subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:  # fmt: skip
        assert process.stdout is not None
        while "building" not in process.stdout.readline():
            assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 143
    assert "ci-tools: terminated (SIGTERM)" in err
    assert "Traceback" not in err
    child = int((tmp_path / "pid").read_text(encoding="utf-8"))
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the child flox outlived ci-tools"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").split(") ", 1)[1][0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie is not alive
