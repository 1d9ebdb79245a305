"""The fatal errors of ci-tools, each with its exit code.

`cli.main()` is the only place that turns these into an exit status; modules raise them.
Exit 2: bad input (a person can fix the catalog, an argument, the environment).
Exit 1: the work itself failed (a build, a check, a publish).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Error text is printed where the Actions runner reads workflow commands: escape.py says how.
from ci_tools.base.escape import escape_data as escape_data
from ci_tools.base.escape import escape_property as escape_property
from ci_tools.base.escape import log_lines as log_lines
from ci_tools.base.escape import printable as printable

if TYPE_CHECKING:
    from ci_tools.base.problem import Problem

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class CiToolsError(Exception):
    """Base of every error ci-tools reports to a person without a traceback."""

    exit_code = EXIT_FAILED


class InputError(CiToolsError):
    """Bad input: an argument, a file, the environment. Exit 2."""

    exit_code = EXIT_BAD_INPUT


class FailedError(CiToolsError):
    """The work failed (a build, a check, a publish). Exit 1."""

    exit_code = EXIT_FAILED


class SourceError(InputError):
    """One or more problems in input files (catalog, runner inventory, workflows)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def one(cls, file: str, line: int, message: str) -> SourceError:
        """The error of one problem in `file` at `line`."""
        from ci_tools.base.problem import Problem  # here: only bad input creates one

        return cls([Problem(file, line, message)])
