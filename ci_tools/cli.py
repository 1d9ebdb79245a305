"""Argument parsing and exit codes only. Each command lives in `ci_tools.commands.<name>`.

Only the module of the command being run is imported, so `ci-tools matrix` never pays for
jinja2 or PyGithub. `main()` is the only place that turns errors into exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from ci_tools import __version__
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
    "build": ("ci_tools.commands.build", "run `flox build` for variants and record the result"),
    "test": ("ci_tools.commands.test", "prove a built variant is what it claims to be"),
    "report": (
        "ci_tools.commands.report",
        "merge result records into one table and summary; exit 1 when any variant failed",
    ),
    "publish": ("ci_tools.commands.publish", "publish variants that passed to a Flox organisation"),
    "release": ("ci_tools.commands.release", "create or update the GitHub release of a branch"),
    "detect": ("ci_tools.commands.detect", "recommend the variant that fits this machine"),
}


def _load(command: str) -> ModuleType:
    return importlib.import_module(COMMANDS[command][0])


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad arguments already; this keeps its message to one clear line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ci-tools",
        description="CI and release tooling for hardware-specific PyTorch/TorchVision builds.",
    )
    parser.add_argument("--version", action="version", version=f"ci-tools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, (_, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            _load(name).configure(command_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(chosen if chosen in COMMANDS else None)
    args = parser.parse_args(args_list)
    try:
        result: int = _load(args.command).run(args)
        _flush_stdout()
        return result
    except CiToolsError as exc:
        _report(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ci-tools: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        # A path the user named that cannot be written or read (`--out` is a file, a
        # read-only folder, a full disk under stdout): what failed and where, no traceback.
        _report(_os_error(exc))
        return EXIT_BAD_INPUT if exc.filename is not None else EXIT_FAILED


def _flush_stdout() -> None:
    """Flush now, so a full disk or closed pipe under stdout is an error here, not at exit."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        # Python flushes stdout again at exit and would print a traceback-like warning:
        # point the descriptor at /dev/null so the error below is the only message.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        raise CiToolsError(f"cannot write the output: {exc.strerror or exc}") from None


def _os_error(exc: OSError) -> CiToolsError:
    where = f"{exc.filename}: " if exc.filename is not None else ""
    error = CiToolsError(f"{where}{exc.strerror or exc}")
    if exc.filename is not None:
        error.exit_code = EXIT_BAD_INPUT
    return error


def _report(exc: CiToolsError) -> None:
    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    text = "\n".join(log_lines("ci-tools: error: ", str(exc), in_actions=in_actions)) + "\n"
    annotations = ""
    if in_actions:
        # The annotations go to stdout, where the runner reads them; every one is escaped.
        problems = exc.problems if isinstance(exc, SourceError) else []
        annotations = (
            "".join(
                f"::error file={escape_property(p.file)},line={p.line}::{escape_data(p.message)}\n"
                for p in problems
            )
            or f"::error::{escape_data(str(exc))}\n"
        )
    # Nowhere left to say it when a stream itself fails; the exit code still does.
    for stream, chunk in ((sys.stderr, text), (sys.stdout, annotations)):
        with contextlib.suppress(OSError, UnicodeEncodeError, ValueError):
            stream.write(chunk)
            stream.flush()
