"""What `ci-tools matrix --branch main` (no fingerprints) pays for at every start (issue 31).

Where PYTHONDONTWRITEBYTECODE is set every module it imports is compiled at every start, and
Python 3.11 compiles several methods for each dataclass it creates: so what only other paths
use stays out of the modules this path imports. Each check runs a fresh interpreter, since
in this one other tests may have imported anything already.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

MATRIX = ["matrix", "--branch", "main"]
# What only other paths use, kept apart for that: the workflow's fingerprints and outputs
# (--github-output, its shards), a repository without a catalog (its recipe files, the
# names they parse), a build's stacks and the output of its children, a fleet's shared cache.
APART = (
    "ci_tools.commands._matrix_workflow",
    "ci_tools.base.ghoutput",
    "ci_tools.plan.sharding",
    "ci_tools.plan.recipesource",
    "ci_tools.catalog.nameparse",
    "ci_tools.catalog.published",
    "ci_tools.catalog.stacks",
    "ci_tools.base.capture",
    "ci_tools.base.linecapture",
    "ci_tools.plan.binarycache",
    "ci_tools.base.digits",  # reads the numbers of options, when given
    "ci_tools.base.problem",  # only bad input creates one
)
# The one dataclass the path defines without creating one: plan/checkout.py's Tree (read
# only for fingerprints).
UNCREATED = {"ci_tools.plan.checkout.Tree"}

# Runs the command in this process, noting the class of every dataclass instance made, then
# prints the modules it imported and its dataclasses that were never instantiated.
PROBE = """
import dataclasses, io, json, sys, contextlib
made = set()
def note(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "__init__":
        self = frame.f_locals.get("self")
        if self is not None and dataclasses.is_dataclass(type(self)):
            made.add(type(self))
sys.setprofile(note)
sys.argv = ["ci-tools", *sys.argv[1:]]
from ci_tools.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main()
sys.setprofile(None)
defined = [
    (name, value)
    for name, module in list(sys.modules.items()) if name.startswith("ci_tools")
    for value in vars(module).values()
    if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value)
]
print(json.dumps({
    "code": code,
    "modules": sorted(sys.modules),
    "uncreated": sorted(f"{name}.{cls.__name__}" for name, cls in defined if cls not in made),
}))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


def test_plain_matrix_creates_every_dataclass_it_defines() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *MATRIX],
        cwd=REPO_ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["code"] == 0
    assert set(seen["uncreated"]) - UNCREATED == set()
    assert set(APART) & set(seen["modules"]) == set()


def _imported(*options: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules `ci-tools matrix --branch main OPTIONS` imports, as -X importtime lists
    them."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ci_tools", *MATRIX, *options],
        cwd=REPO_ROOT,
        env={**_env(), **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    return set(re.findall(r"\|\s+([\w.]+)$", done.stderr, flags=re.MULTILINE))


def test_plain_matrix_imports_no_subprocess() -> None:
    """The overlays' parse starts Nix with os.posix_spawnp: `subprocess` (and `selectors`)
    cost about 5 ms of every start, on the path's critical thread."""
    imported = _imported()
    assert "ci_tools.catalog.overlays" in imported  # the check sees the parse's own imports
    assert {"subprocess", "selectors"} & imported == set()


def test_workflow_matrix_reads_no_github_answers(tmp_path: Path) -> None:
    """The workflow's call (--github-output) reads none of the check runs only
    --until-green asks GitHub for."""
    imported = _imported("--github-output", env={"GITHUB_OUTPUT": str(tmp_path / "output")})
    assert "ci_tools.plan.sharding" in imported  # the check sees the workflow's own imports
    assert "ci_tools.base.github_answers" not in imported
    # Nor the lines of a streamed child: its children's output is captured whole.
    assert "ci_tools.base.linecapture" not in imported


def test_since_matrix_imports_neither_the_greens_reads_nor_the_shards() -> None:
    """`--since` alone (the workflow's fallback without a token, and a person's look at what
    a push changed) imports neither the status reads nor the output's shards."""
    imported = _imported("--since", "HEAD")
    assert "ci_tools.plan.changes" in imported  # the check sees the comparison's own imports
    assert {"ci_tools.plan.sharding", "ci_tools.plan.statuses", "tenacity"} & imported == set()
