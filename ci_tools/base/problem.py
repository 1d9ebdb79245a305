"""One thing wrong in an input file, located by file and line (`errors.SourceError`).

Apart from `errors` so that a run without bad input (every `ci-tools matrix` of a sound
catalog) does not create its record, whose ordering costs Python as much as a module.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.base.escape import printable


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong in an input file, located by file and 1-based line."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        # One problem, one line: a newline quoted from the input is shown, not obeyed.
        return printable(f"{self.file}:{self.line}: {self.message}").replace("\n", "\\n")
