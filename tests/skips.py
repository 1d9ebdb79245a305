"""What the suite may skip, and where a skip is a promise.

* `debian_tool(COMMAND, PACKAGE)` (a mark) and `missing(COMMAND, PACKAGE)`: skip when COMMAND is missing, saying that `.ci/run`
  installs PACKAGE. tests/test_ci_run.py holds every such promise to `.ci/run`'s own list.
* Under CI (CI=true, as `.ci/run` runs in CI), a skip for any other reason than those in
  ALLOWED_IN_CI fails the session: a machine without a tool must not pass as green.
"""

from __future__ import annotations

import os
import shutil

import pytest

# The only skip CI may have: the suite runs as root there, and root writes into read-only
# folders, so the read-only-output case cannot be staged (tests/fuzz/test_items.py).
ALLOWED_IN_CI = ("root writes into read-only folders",)
PROMISE = ".ci/run installs it"


def missing(command: str, package: str) -> str | None:
    """Why a test must skip when COMMAND (a name on PATH or a path) is not there, else None."""
    if shutil.which(command) is not None:
        return None
    return f"needs `{command}` from Debian's {package} ({PROMISE})"


def debian_tool(command: str, package: str) -> pytest.MarkDecorator:
    reason = missing(command, package)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def strict() -> bool:
    return os.environ.get("CI") == "true"


def unexpected(reasons: list[str]) -> list[str]:
    """The skip reasons CI must not have."""
    return [r for r in reasons if not any(allowed in r for allowed in ALLOWED_IN_CI)]
