"""Argument parsing and exit codes only. Each command lives in `ci_tools.commands.<name>`.

Only the module of the command being run is imported, so `ci-tools matrix` never pays for
jinja2 or PyGithub. `main()` is the only place that turns errors into exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from ci_tools import __version__
from ci_tools.base import escape, redact
from ci_tools.base.bounded import shorten
from ci_tools.base.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    CiToolsError,
    SourceError,
    escape_data,
    escape_property,
    log_lines,
)

# command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("ci_tools.commands.generate", "render the recipes of a branch from the catalog"),
    "matrix": ("ci_tools.commands.matrix", "print the GitHub Actions build matrix as JSON"),
    "mark-green": (
        "ci_tools.commands.mark_green",
        "record a stack's input fingerprint as green on the built commit (commit status)",
    ),
    "sync-workflows": (
        "ci_tools.commands.sync_workflows",
        "keep the workflows' branch lists equal to the catalog's branches",
    ),
    "preflight": (
        "ci_tools.commands.preflight",
        "check that this self-hosted runner has flox, Nix and the free disk a build needs",
    ),
    "build": ("ci_tools.commands.build", "run `flox build` for variants and record the result"),
    "test": ("ci_tools.commands.test", "prove a built variant is what it claims to be"),
    "report": (
        "ci_tools.commands.report",
        "merge result records into one table and summary; exit 1 when any variant failed",
    ),
    "publish": ("ci_tools.commands.publish", "publish variants that passed to a Flox organisation"),
    "release": ("ci_tools.commands.release", "create or update the GitHub release of a branch"),
    "verify": (
        "ci_tools.commands.verify",
        "check that an installed variant is the bytes a release published, and how it was proven",
    ),
    "detect": ("ci_tools.commands.detect", "recommend the variant that fits this machine"),
    "page": ("ci_tools.commands.page", "write the variant selector page (one static HTML file)"),
}


def _load(command: str) -> ModuleType:
    return importlib.import_module(COMMANDS[command][0])


class _Formatter(argparse.HelpFormatter):
    """argparse's, but its width found without `shutil`: argparse makes a formatter for every
    argument it adds, and `shutil` imports the compression modules, a cost at every start of
    every command. The width is what `shutil.get_terminal_size` gives: COLUMNS, else the
    terminal's, else 80."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = _columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


@functools.cache
def _columns() -> int:
    with contextlib.suppress(KeyError, ValueError):
        columns = int(os.environ["COLUMNS"])
        if columns > 0:
            return columns
    stdout = sys.__stdout__
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80 if stdout else 80
    except (ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad arguments already; this keeps its message to one clear line."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {shorten(message, MAX_QUOTED)}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


# The longest argument ci-tools takes (a path: PATH_MAX); what it quotes back of any input is
# cut to a few hundred characters, so a huge argument is never echoed back in full.
MAX_ARGUMENT = 4096
MAX_QUOTED = 300


def _check_lengths(args: Sequence[str]) -> None:
    for number, arg in enumerate(args):
        if len(arg) > MAX_ARGUMENT:
            option, _, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
            if not option and number > 0 and args[number - 1].startswith("-"):
                option = args[number - 1]
            which = f"argument {option}" if option else f"argument {number + 1}"
            _Parser(prog="ci-tools").error(
                f"{which}: a value of {len(value)} characters ({value[:40]!r}...); no value "
                f"ci-tools takes is over {MAX_ARGUMENT}"
            )


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ci-tools",
        description="CI and release tooling for hardware-specific PyTorch/TorchVision builds.",
    )
    parser.add_argument("--version", action="version", version=f"ci-tools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    # With a command named, only its parser: the others' would never be used.
    for name, (_, help_text) in COMMANDS.items():
        if only is None or name == only:
            command_parser = sub.add_parser(name, help=help_text, description=help_text)
            _load(name).configure(command_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every line it prints is redacted and made inert for the Actions
    runner on the way out (`escape.guarded_streams`)."""
    with escape.guarded_streams(redact.known()):
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    _check_lengths(args_list)
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(chosen if chosen in COMMANDS else None)
    args = parser.parse_args(args_list)
    try:
        with _terminate_on_sigterm():
            result: int = _load(args.command).run(args)
        _flush_stdout()
        return result
    except CiToolsError as exc:
        _report(exc)
        return exc.exit_code
    except BrokenPipeError:
        # The reader of stdout closed it (`ci-tools matrix | head`): it chose to read no
        # more, so nothing is said, and the status is a pipe writer's killed by SIGPIPE.
        _stdout_to_devnull()
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        print("ci-tools: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("ci-tools: terminated (SIGTERM); what it was running was stopped", file=sys.stderr)
        return 128 + signal.SIGTERM
    except OSError as exc:
        # A path the user named that cannot be written or read (`--out` is a file, a
        # read-only folder, a full disk under stdout): what failed and where, no traceback.
        _report(_os_error(exc))
        return EXIT_BAD_INPUT if exc.filename is not None else EXIT_FAILED


class Terminated(BaseException):
    """SIGTERM arrived (a cancelled job, `kill`): unwinds like Ctrl-C, so a child is stopped,
    a transaction undone, and the exit status is the shell's 128 + 15."""


def _raise_terminated(_signum: int, _frame: object) -> None:
    raise Terminated


@contextlib.contextmanager
def _terminate_on_sigterm() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread (an embedding program): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _flush_stdout() -> None:
    """Flush now, so a full disk or closed pipe under stdout is an error here, not at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # the reader is gone: `_main` ends quietly
    except OSError as exc:
        _stdout_to_devnull()
        raise CiToolsError(f"cannot write the output: {exc.strerror or exc}") from None


def _stdout_to_devnull() -> None:
    """Python flushes stdout again at exit, and would print a traceback-like warning about a
    stream that cannot be written: its descriptor is pointed at /dev/null."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _os_error(exc: OSError) -> CiToolsError:
    where = f"{exc.filename}: " if exc.filename is not None else ""
    error = CiToolsError(f"{where}{exc.strerror or exc}")
    if exc.filename is not None:
        error.exit_code = EXIT_BAD_INPUT
    return error


def _report(exc: CiToolsError) -> None:
    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    message = shorten(str(exc), MAX_QUOTED * 4)
    text = "\n".join(log_lines("ci-tools: error: ", message, in_actions=in_actions)) + "\n"
    annotations: list[str] = []
    if in_actions:
        # The annotations go to stdout, where the runner reads them; every one is escaped.
        problems = exc.problems if isinstance(exc, SourceError) else []
        annotations = [
            f"::error file={escape_property(p.file)},line={p.line}::"
            f"{escape_data(shorten(p.message, MAX_QUOTED * 4))}"
            for p in problems
        ] or [f"::error::{escape_data(message)}"]
    # Nowhere left to say it when a stream itself fails; the exit code still does.
    with contextlib.suppress(OSError, UnicodeEncodeError, ValueError):
        sys.stderr.write(text)
        sys.stderr.flush()
    with contextlib.suppress(OSError, UnicodeEncodeError, ValueError):
        for line in annotations:
            escape.write_command(sys.stdout, line)
        sys.stdout.flush()
