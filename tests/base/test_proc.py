"""The external-command wrapper."""

from __future__ import annotations

import sys
import time

import pytest

from ci_tools.base import capture, proc
from ci_tools.base.errors import InputError


def test_missing_tool_is_bad_input_naming_it() -> None:
    with pytest.raises(proc.ToolMissingError, match="`flox` was not found on PATH"):
        proc.run(["flox", "--version"], env={"PATH": "/nonexistent"})


def test_run_captures_output_and_exit_code() -> None:
    result = proc.run([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"])
    assert result.returncode == 3
    assert result.stdout.strip() == "out"
    assert not result.ok


def test_run_times_out_without_raising() -> None:
    result = proc.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert result.timed_out
    assert not result.ok


def test_stream_passes_lines_and_keeps_the_tail() -> None:
    seen: list[str] = []
    result = proc.stream(
        [sys.executable, "-c", "import sys\nfor i in range(10): print(i)\nsys.exit(1)"],
        on_line=seen.append,
        keep_lines=3,
    )
    assert seen == [str(i) for i in range(10)]
    assert result.stdout == "7\n8\n9"
    assert result.returncode == 1


def test_tool_missing_is_an_input_error() -> None:
    assert issubclass(proc.ToolMissingError, InputError)


# --- issue 20 item 4: child-process output is held within a bound ---------------------------

_FLOOD = (
    "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range({mb}): sys.stdout.buffer.write(chunk)\n"
)


def test_run_keeps_a_bounded_head_of_a_flood_and_says_so() -> None:
    result = proc.run([sys.executable, "-c", _FLOOD.format(mb=64)], max_output=1 << 20)
    assert result.ok
    assert result.truncated
    assert len(result.stdout) == 1 << 20


def test_run_bytes_keeps_a_bounded_head() -> None:
    result = proc.run_bytes([sys.executable, "-c", _FLOOD.format(mb=8)], max_output=1000)
    assert result.truncated and result.stdout == b"x" * 1000


def test_run_passes_stdin_and_reads_both_streams() -> None:
    code = "import sys; data = sys.stdin.read(); print(data.upper()); print('e', file=sys.stderr)"
    result = proc.run([sys.executable, "-c", code], stdin="abc")
    assert (result.stdout, result.stderr, result.truncated) == ("ABC\n", "e\n", False)


def test_stream_cuts_a_huge_line_as_it_arrives() -> None:
    seen: list[str] = []
    code = "import sys\nsys.stdout.write('a' * (64 << 20) + '\\nend\\n')"
    result = proc.stream([sys.executable, "-c", code], on_line=seen.append, max_line=1000)
    assert seen == ["a" * 1000 + capture.cut_marker((64 << 20) - 1000), "end"]
    assert result.ok


def test_stream_times_out_on_a_silent_child() -> None:
    code = "import time; print('started', flush=True); time.sleep(60)"
    result = proc.stream([sys.executable, "-c", code], on_line=lambda _: None, timeout=1)
    assert result.timed_out and result.seconds < 30


SECRET = "floxhub_SeCrEt_0123456789abcdef"
QUOTES_IT = "import os, sys; t = os.environ['FLOX_FLOXHUB_TOKEN']; print('out', t); print('err', t, file=sys.stderr)"


def test_run_redacts_what_the_child_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20 item 3: a tool quoting its token does not carry it into ci-tools' hands."""
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", SECRET)
    result = proc.run([sys.executable, "-c", QUOTES_IT])
    assert SECRET not in result.stdout + result.stderr
    assert result.stdout.strip() == "out ***" and result.stderr.strip() == "err ***"


def test_run_redacts_a_secret_of_the_child_environment_only() -> None:
    env = {"PATH": "/usr/bin:/bin", "FLOX_FLOXHUB_TOKEN": SECRET}
    result = proc.run([sys.executable, "-c", QUOTES_IT], env=env)
    assert SECRET not in result.stdout + result.stderr


def test_stream_redacts_each_line_before_anyone_sees_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", SECRET)
    seen: list[str] = []
    result = proc.stream([sys.executable, "-c", QUOTES_IT], on_line=seen.append)
    assert sorted(seen) == ["err ***", "out ***"]
    assert SECRET not in result.stdout


def test_run_bytes_redacts_stderr_and_keeps_stdout_as_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", SECRET)
    result = proc.run_bytes([sys.executable, "-c", QUOTES_IT])
    assert SECRET not in result.stderr
    assert SECRET.encode() in result.stdout  # bytes to hash, never printed


def test_a_started_child_answers_as_run_would() -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    started = proc.start([sys.executable, "-c", code])
    result = started.result()
    ran = proc.run([sys.executable, "-c", code])
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert (ran.returncode, ran.stdout, ran.stderr) == (3, "out\n", "err\n")


def test_a_started_childs_timeout_counts_from_its_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its answer waits only for what is left of its timeout: none, once the work done
    meanwhile took longer (the wait asked for is read, not timed)."""
    waits: list[float | None] = []
    real_wait = proc._wait

    def recording(process: object, timeout: float | None) -> bool:
        waits.append(timeout)
        return real_wait(process, timeout)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "_wait", recording)
    started = proc.start([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    time.sleep(1)  # the work done meanwhile: longer than the timeout, however slow the machine
    result = started.result()
    assert result.timed_out and not result.ok
    assert waits == [0.0]


def test_a_started_tool_that_is_missing_is_bad_input() -> None:
    with pytest.raises(proc.ToolMissingError):
        proc.start(["ci-tools-no-such-tool"])
