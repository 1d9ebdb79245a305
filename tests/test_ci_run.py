"""`.ci/run` installs what the suite needs: every skip that promises ".ci/run installs it"
names a Debian package that `.ci/run` really installs (issue 27: the aarch64 scanner tests
promised binutils-aarch64-linux-gnu, which `.ci/run` never installed, so a fresh machine
never ran them and CI stayed green)."""

from __future__ import annotations

import re

from tests import skips
from tests.conftest import REPO_ROOT, TESTS

CI_RUN = REPO_ROOT / ".ci" / "run"
NEED = re.compile(r"^need\s+(\S+)\s+(\S+)", re.MULTILINE)
CALL = re.compile(r"\b(?:debian_tool|missing)\(\s*([^,()]+?),\s*\"([^\"]+)\"\s*\)")


def installed() -> dict[str, str]:
    """PACKAGE -> COMMAND, from `.ci/run`'s need lines."""
    return {package: command for command, package in NEED.findall(CI_RUN.read_text())}


def promises() -> list[tuple[str, str, str]]:
    """(file, command expression, package) of every skip that names a Debian package."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for command, package in CALL.findall(path.read_text(encoding="utf-8")):
            found.append((str(path.relative_to(REPO_ROOT)), command, package))
    return found


def test_every_promised_package_is_installed_by_ci_run() -> None:
    made = promises()
    assert (
        "tests/build/test_isa.py",
        '"aarch64-linux-gnu-as"',
        "binutils-aarch64-linux-gnu",
    ) in made
    assert {p for _, _, p in made} >= {"chromium", "chromium-driver"}
    have = installed()
    unkept = [(f, c, p) for f, c, p in made if p not in have]
    assert not unkept, f".ci/run installs none of these promised packages: {unkept}"


def test_a_literal_command_is_the_one_ci_run_checks_for() -> None:
    have = installed()
    for file, command, package in promises():
        if command.startswith('"'):
            assert command.strip('"') == have[package], (file, command, package)


def test_no_promise_is_made_outside_the_helper() -> None:
    """A skip reason written by hand could promise a package the list lacks, unchecked."""
    for path in TESTS.rglob("*.py"):
        if path.name in {"skips.py", "test_ci_run.py"}:
            continue
        text = path.read_text(encoding="utf-8")
        assert skips.PROMISE not in text and "(.ci/run does)" not in text, path


def test_a_missing_package_is_found() -> None:
    """The check can fail: a promise of a package not in the list is reported."""
    have = installed()
    assert "binutils-aarch64-linux-gnu" in have
    assert "binutils-riscv64-linux-gnu" not in have


def test_ci_allows_only_the_root_only_skip() -> None:
    reasons = [
        "tests/x.py::a: Skipped: root writes into read-only folders",
        "tests/build/test_isa.py::b: Skipped: needs `aarch64-linux-gnu-as` from Debian's binutils",
    ]
    assert skips.unexpected(reasons) == reasons[1:]
