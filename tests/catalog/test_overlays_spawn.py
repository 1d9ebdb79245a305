"""ci_tools.catalog.overlays starts its Nix parse with `os.posix_spawnp`, not `subprocess`
(whose import every `ci-tools matrix` would pay): the child must still get what Popen gives
it, and the 60 s bound must still kill it."""

from __future__ import annotations

import os
import signal

import pytest

from ci_tools.catalog import overlays


def _exit_code(argv: list[str]) -> int:
    pid = overlays._spawn_quietly(argv)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_the_child_reads_and_writes_dev_null() -> None:
    for fd in (0, 1, 2):
        script = f'[ "$(readlink /proc/$$/fd/{fd})" = /dev/null ]'
        assert _exit_code(["sh", "-c", script]) == 0, fd


def test_the_child_has_sigpipe_and_sigxfsz_at_their_defaults() -> None:
    """Python ignores both; Popen's restore_signals puts them back for the child, so a tool
    writing to a closed pipe ends as it would from a shell."""
    mask = sum(1 << (number - 1) for number in (signal.SIGPIPE, signal.SIGXFSZ))
    ignored = "$(awk '/^SigIgn/ {print $2}' /proc/$$/status)"
    script = f"ignored={ignored}; [ $((0x$ignored & {mask})) -eq 0 ]"
    assert _exit_code(["sh", "-c", script]) == 0


def test_the_child_inherits_no_other_descriptor() -> None:
    """As Popen's close_fds: a descriptor ci-tools was handed (inheritable, above 2) is not
    the child's, so a parse cannot hold a pipe of whoever started ci-tools open."""
    read, write = os.pipe()
    try:
        os.set_inheritable(write, True)
        assert _exit_code(["sh", "-c", f"[ ! -e /proc/$$/fd/{write} ]"]) == 0
    finally:
        os.close(read)
        os.close(write)


def test_a_command_not_on_path_is_an_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        overlays._spawn_quietly(["ci-tools-no-such-command"])


def test_the_bound_kills_a_child_still_running() -> None:
    pid = overlays._spawn_quietly(["sleep", "30"])
    overlays._kill_if_running(pid)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL


def test_the_bound_leaves_a_reaped_child_alone() -> None:
    pid = overlays._spawn_quietly(["true"])
    os.waitpid(pid, 0)
    overlays._kill_if_running(pid)  # no error, and nothing killed
