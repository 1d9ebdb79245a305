"""The path/symlink class (issue 20 items 1 and 2): hostile checkouts through `generate`, and
hostile result folders through `report`.

Each case is a checkout rendered for one branch, then given one to three hostile moves at
random: a folder of `.flox/` linked out of the checkout, a recipe linked to a file outside or
to a device or FIFO, a staging journal committed to the branch (with no nonce, a forged one, or
one shaped like a path), the staging folder or its journal linked out, the README or the docs
page holding the generated tables linked out,
a stray temporary file linked out. Result folders get records that are links to devices,
FIFOs, folders or loops, and `--planned` files that are FIFOs or devices.

Invariants:
  P1 nothing outside the checkout is created, changed or deleted (a snapshot of everything
     the links lead to is byte-for-byte the same after), and no git hook appears;
  P2 every run ends within its time bound with exit 0, 1 or 2, never a traceback;
  P3 a refusal (exit 2) names the path it refuses;
  P4 after `generate` exits 0, `generate --check` passes: the folder is the rendering.

Short mode (the normal suite): one case per move that once wrote outside or read without end,
and every result-folder case; CI_TOOLS_FUZZ=long: every move alone, then combinations, LONG
cases in all.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools.base import transaction

from . import harness
from .classes import Table, run_measured

LONG = 120
BRANCH = "cuda-13_0"
OTHER_BRANCH = "main"
PKGS = Path(".flox") / "pkgs"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A checkout rendered for BRANCH, and another branch's rendering (files to protect)."""
    root = tmp_path_factory.mktemp("paths-template")
    work = root / "work"
    work.mkdir()
    shutil.copy(harness.REPO_ROOT / "catalog.yaml", work / "catalog.yaml")
    shutil.copy(harness.REPO_ROOT / "README.md", work / "README.md")
    shutil.copytree(harness.REPO_ROOT / "docs", work / "docs")
    assert harness.run_inprocess(["generate", "--branch", BRANCH], work).code == 0
    other = harness.run_inprocess(["generate", "--branch", OTHER_BRANCH, "--out", "other"], work)
    assert other.code == 0, other.stderr
    shutil.move(work / "other", root / "other")
    return work, root / "other"


# --- hostile moves: each changes the checkout `work`; `outside` holds what must not change ---

Move = Callable[[Path, Path, random.Random], bool]  # True: the case must run as a process


def _recipe(work: Path, rng: random.Random) -> Path:
    return rng.choice(sorted((work / PKGS).glob("pytorch-*.nix")))


def pkgs_linked_out(work: Path, outside: Path, rng: random.Random) -> bool:
    shutil.move(work / PKGS, outside / "pkgs")
    (work / PKGS).symlink_to(outside / "pkgs")
    return False


def flox_linked_out(work: Path, outside: Path, rng: random.Random) -> bool:
    shutil.move(work / ".flox", outside / "flox")
    (work / ".flox").symlink_to(outside / "flox")
    return False


def lib_linked_to_another_checkout(work: Path, outside: Path, rng: random.Random) -> bool:
    (work / PKGS / "lib").symlink_to(outside / "victim")
    return False


def recipe_linked_out(work: Path, outside: Path, rng: random.Random) -> bool:
    recipe = _recipe(work, rng)
    recipe.unlink()
    recipe.symlink_to(rng.choice(sorted((outside / "victim").iterdir())))
    return False


def recipe_is_a_device_or_fifo(work: Path, outside: Path, rng: random.Random) -> bool:
    recipe = _recipe(work, rng)
    recipe.unlink()
    if rng.random() < 0.5:
        recipe.symlink_to(rng.choice(["/dev/zero", "/dev/urandom"]))
    else:
        os.mkfifo(recipe)
    return True


def journal_committed(work: Path, outside: Path, rng: random.Random) -> bool:
    staging = work / PKGS / transaction.STAGING
    staging.mkdir(exist_ok=True)
    (staging / "0.new").write_text("#!/bin/sh\ntouch pwned\n", encoding="utf-8")
    (staging / "1.new").write_text("planted\n", encoding="utf-8")
    victim = sorted((outside / "victim").iterdir())[0]
    journal: dict[str, object] = {
        "writes": [["0.new", "../../.git/hooks/pre-commit"], ["1.new", str(outside / "new")]],
        "deletes": [str(victim), "../../README.md", "lib/../../../x"],
    }
    nonce = rng.choice([None, secrets.token_hex(16), "../../../../etc/passwd", 7])
    if nonce is not None:
        journal["nonce"] = nonce
    planted = staging / "journal.json"
    if not (planted.exists() or planted.is_symlink()):  # another move planted a FIFO or link
        planted.write_text(json.dumps(journal), encoding="utf-8")
    return False


def staging_linked_out(work: Path, outside: Path, rng: random.Random) -> bool:
    staging = work / PKGS / transaction.STAGING
    if not (staging.exists() or staging.is_symlink()):  # an earlier move made the folder
        staging.symlink_to(outside / "victim")
    return False


def journal_is_a_device_or_fifo(work: Path, outside: Path, rng: random.Random) -> bool:
    staging = work / PKGS / transaction.STAGING
    staging.mkdir(exist_ok=True)
    journal = staging / "journal.json"
    if rng.random() < 0.5:
        journal.symlink_to("/dev/zero")
    else:
        os.mkfifo(journal)
    return True


def readme_linked_out(work: Path, outside: Path, rng: random.Random) -> bool:
    shutil.move(work / "README.md", outside / "README.md")
    (work / "README.md").symlink_to(outside / "README.md")
    return False


def readme_is_a_device_or_huge(work: Path, outside: Path, rng: random.Random) -> bool:
    (work / "README.md").unlink()
    if rng.random() < 0.5:
        (work / "README.md").symlink_to("/dev/zero")
    else:
        with (outside / "huge").open("wb") as handle:
            handle.truncate(64 << 20)  # sparse: costs no disk
        (work / "README.md").symlink_to(outside / "huge")
    return True


# The manual's page that holds the generated blocks (`generate` rewrites it).
REFERENCE = Path("docs") / "reference.md"


def reference_linked_out(work: Path, outside: Path, rng: random.Random) -> bool:
    shutil.move(work / REFERENCE, outside / "reference.md")
    (work / REFERENCE).symlink_to(outside / "reference.md")
    return False


def reference_is_a_device_or_huge(work: Path, outside: Path, rng: random.Random) -> bool:
    (work / REFERENCE).unlink()
    if rng.random() < 0.5:
        (work / REFERENCE).symlink_to("/dev/zero")
    else:
        with (outside / "huge-reference").open("wb") as handle:
            handle.truncate(64 << 20)  # sparse: costs no disk
        (work / REFERENCE).symlink_to(outside / "huge-reference")
    return True


def stray_temp_linked_out(work: Path, outside: Path, rng: random.Random) -> bool:
    (work / PKGS / f".{_recipe(work, rng).name}.abcd1234.tmp").symlink_to(outside / "precious")
    return False


MOVES: tuple[Move, ...] = (
    pkgs_linked_out,
    flox_linked_out,
    lib_linked_to_another_checkout,
    recipe_linked_out,
    recipe_is_a_device_or_fifo,
    journal_committed,
    staging_linked_out,
    journal_is_a_device_or_fifo,
    readme_linked_out,
    readme_is_a_device_or_huge,
    reference_linked_out,
    reference_is_a_device_or_huge,
    stray_temp_linked_out,
)
# Moves that take the folder they act in away from the checkout come first, so that the
# others act through the link, as a hostile checkout would have them.
_FIRST = (flox_linked_out, pkgs_linked_out)


# The short mode: one case for each move that once wrote outside or read without end.
SHORT_MOVES: tuple[Move, ...] = (
    journal_committed,
    pkgs_linked_out,
    lib_linked_to_another_checkout,
    recipe_is_a_device_or_fifo,
    staging_linked_out,
    readme_linked_out,
    reference_linked_out,
)


def _plans(rng: random.Random, long: bool) -> list[list[Move]]:
    """Each move alone, then (long mode) random combinations of two or three."""
    if not long:
        return [[move] for move in SHORT_MOVES]
    return [[move] for move in MOVES] + [
        rng.sample(MOVES, rng.randint(2, 3)) for _ in range(LONG - len(MOVES))
    ]


def _case(
    rendered: tuple[Path, Path], folder: Path, moves: list[Move], rng: random.Random
) -> tuple[Path, Path, bool]:
    work, other = rendered
    shutil.copytree(work, folder / "work", symlinks=True)
    outside = folder / "outside"
    shutil.copytree(other, outside / "victim")
    (outside / "precious").write_text("keep me\n", encoding="utf-8")
    (folder / "work" / ".git" / "hooks").mkdir(parents=True)
    ordered = sorted(moves, key=lambda m: (m not in _FIRST, m is flox_linked_out))
    as_process = False
    for move in ordered:
        if move is pkgs_linked_out and flox_linked_out in ordered:
            continue  # the whole of .flox is already outside
        as_process |= move(folder / "work", outside, rng)
    return folder / "work", outside, as_process


def test_hostile_checkouts_through_generate(
    rendered: tuple[Path, Path],
    tmp_path: Path,
    fuzz_seed: int,
    fuzz_long: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rng = random.Random(fuzz_seed + 20)
    table = Table("path/symlink class: generate on hostile checkouts")
    for index, moves in enumerate(_plans(rng, fuzz_long)):
        label = f"seed {fuzz_seed + 20} case {index}: " + "+".join(m.__name__ for m in moves)
        folder = tmp_path / f"case-{index}"
        work, outside, as_process = _case(rendered, folder, moves, rng)
        before = harness.snapshot(outside)
        check = rng.random() < 0.2
        argv = ["generate", "--branch", BRANCH, *(["--check"] if check else [])]
        if as_process:
            measured = run_measured(argv, work, folder, timeout=60)
            run, seconds = measured.run, measured.seconds
            assert not measured.timed_out, f"[{label}] did not end: a read without end?"
        else:
            run, seconds = harness.run_inprocess(argv, work), 0.0
        table.add("+".join(sorted(m.__name__ for m in moves)), run.code, seconds)
        harness.check_run(run, label=label, tally=harness.Tally(), bad_input=None, file_line=False)
        table.held["P2 ends, exit 0/1/2, no traceback"] += 1
        harness.check_unchanged(before, harness.snapshot(outside), f"[{label}] outside")
        assert not (work / ".git" / "hooks" / "pre-commit").exists(), f"[{label}] a hook"
        table.held["P1 nothing outside changed"] += 1
        if run.code == 2:
            assert str(work) in run.stderr or str(outside) in run.stderr or ".flox" in run.stderr, (
                f"[{label}] exit 2 names no path:\n{run.stderr[-2000:]}"
            )
            table.held["P3 a refusal names its path"] += 1
        if run.code == 0 and not check:
            again = harness.run_inprocess([*argv, "--check"], work)
            assert again.code == 0, f"[{label}] not the rendering after exit 0:\n{again.stderr}"
            table.held["P4 exit 0 leaves the rendering"] += 1
        shutil.rmtree(folder)
    with capsys.disabled():
        print("\n" + table.render())


# --- result folders and plans ----------------------------------------------------------------

RECORD = harness.REPO_ROOT / "tests" / "data" / "results-cuda-12_9"


def _results_case(kind: str, results: Path, outside: Path) -> list[str]:
    """The results folder for `kind` (with one good record), and the extra arguments."""
    shutil.copy(sorted(RECORD.glob("*.result.json"))[0], results)
    bad = results / "x.result.json"
    if kind == "record-device":
        bad.symlink_to("/dev/zero")
    elif kind == "record-fifo":
        os.mkfifo(bad)
    elif kind == "record-folder":
        bad.symlink_to(outside)
    elif kind == "record-loop":
        bad.symlink_to(bad)
    elif kind == "folder-linked-out":
        (results / "sub").symlink_to(outside)  # not followed: a link to a folder is skipped
    elif kind in ("planned-device", "planned-fifo"):
        planned = results.parent / "planned"
        if kind == "planned-device":
            planned.symlink_to("/dev/zero")
        else:
            os.mkfifo(planned)
        return ["--planned", str(planned)]
    return []


RESULT_KINDS = (
    "record-device", "record-fifo", "record-folder", "record-loop", "folder-linked-out",
    "planned-device", "planned-fifo",
)  # fmt: skip


def test_hostile_result_folders_through_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = Table("path/symlink class: report on hostile result folders")
    for kind in RESULT_KINDS:
        folder = tmp_path / kind
        results, outside = folder / "results", folder / "outside"
        results.mkdir(parents=True)
        outside.mkdir()
        shutil.copy(sorted(RECORD.glob("*.result.json"))[1], outside / "y.result.json")
        extra = _results_case(kind, results, outside)
        before = harness.snapshot(outside)
        measured = run_measured(["report", str(results), *extra], folder, folder, timeout=60)
        table.add(kind, measured.run.code, measured.seconds, measured.peak_kib)
        assert not measured.timed_out, f"[{kind}] read without end"
        harness.check_run(measured.run, label=kind, tally=harness.Tally(), bad_input=None,
                          file_line=False)  # fmt: skip
        table.held["P2 ends, exit 0/1/2, no traceback"] += 1
        if kind == "folder-linked-out":
            assert measured.run.code == 0, measured.run.stderr
        else:
            assert measured.run.code == 2, f"[{kind}] {measured.run.stderr}"
            assert "not a regular file" in measured.run.stderr or "readable" in measured.run.stderr
            table.held["P3 a refusal names its path"] += 1
        harness.check_unchanged(before, harness.snapshot(outside), f"[{kind}] outside")
        table.held["P1 nothing outside changed"] += 1
    with capsys.disabled():
        print("\n" + table.render())
