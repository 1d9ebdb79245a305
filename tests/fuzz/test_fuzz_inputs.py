"""Mutated runner inventories through `matrix`, and mutated result records through `report`.

Records are read by the one schema-checked loader (ci_tools/build/results/). KNOWN_RECORD_CRASHES
names exception types a record may still raise (none today): any crash outside it fails the
test, and every crash seen is printed.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from . import harness, mutations
from .harness import Tally

SHORT_RUNNERS, LONG_RUNNERS = 60, 600
SHORT_RECORDS, LONG_RECORDS = 40, 400
RECORDS = harness.REPO_ROOT / "tests" / "data" / "results-cuda-12_9"


def test_mutated_runner_inventories(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed + 1)
    shutil.copy(harness.REPO_ROOT / "catalog.yaml", tmp_path / "catalog.yaml")
    original = (harness.REPO_ROOT / "runners.yaml").read_text(encoding="utf-8")
    tally = Tally()
    cases = list(mutations.mutate_yaml(original, rng, LONG_RUNNERS if fuzz_long else SHORT_RUNNERS))
    sample = set(rng.sample(range(len(cases)), 3))
    for index, case in enumerate(cases):
        tally.cases += 1
        label = f"seed {fuzz_seed + 1} runners case {index}: {case.label}"
        (tmp_path / "runners.yaml").write_text(case.text, encoding="utf-8", errors="surrogatepass")
        before = harness.snapshot(tmp_path)
        argv = ["matrix", "--branch", "main"]
        run = (
            harness.run_subprocess(argv, tmp_path, tmp_path)
            if index in sample
            else harness.run_inprocess(argv, tmp_path)
        )
        harness.check_run(run, label=label, tally=tally, bad_input=None, allowed=frozenset({0, 2}))
        if run.code == 0:
            entries = json.loads(run.stdout)["include"]
            for entry in entries:  # what reaches `runs-on` obeys the label grammar
                for label_text in (
                    entry["runs_on"] if "runs_on" in entry else entry.get("runs-on", [])
                ):
                    assert harness.LABEL.fullmatch(label_text), f"[{label}] runs-on {label_text!r}"
            tally.invariants["runs-on labels valid"] += 1
        harness.check_unchanged(before, harness.snapshot(tmp_path), f"[{label}] the checkout")
        tally.invariants["I7 nothing written"] += 1
    with capsys.disabled():
        print(f"\nfuzz runners: {tally.summary()}")
    assert 0 < tally.exit_codes["matrix=0"] < tally.cases


# Found by this suite; the smoke helper owns the fix (ci_tools/build/results/, issue 12 item 4).
KNOWN_RECORD_CRASHES: frozenset[str] = frozenset()


def test_mutated_result_records_through_report(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed + 2)
    sources = sorted(RECORDS.glob("*.result.json"))
    tally = Tally()
    crashes: dict[str, str] = {}
    count = LONG_RECORDS if fuzz_long else SHORT_RECORDS
    for index in range(count):
        source = rng.choice(sources)
        record = json.loads(source.read_text(encoding="utf-8"))
        case = next(mutations.mutate_record(record, rng, 1))
        tally.cases += 1
        label = f"seed {fuzz_seed + 2} record case {index}: {source.name}: {case.label}"
        folder = tmp_path / f"case-{index}"
        folder.mkdir()
        for other in sources:
            shutil.copy(other, folder / other.name)
        (folder / source.name).write_text(case.text, encoding="utf-8", errors="surrogatepass")
        before = harness.snapshot(tmp_path)
        run = harness.run_inprocess(["report", str(folder)], tmp_path)
        if run.crash is not None or run.code not in (0, 1, 2):
            last = (run.crash or run.stderr).strip().splitlines()[-1]
            crashes.setdefault(last.split(":")[0], label + "\n" + last)
            tally.exit_codes[f"report=crash:{last.split(':')[0]}"] += 1
        else:
            harness.check_run(run, label=label, tally=tally, bad_input=None, file_line=False)
            if run.code == 2:
                assert source.name in run.stderr, (
                    f"[{label}] the error names no file:\n{run.stderr}"
                )
                tally.invariants["I3 names the record"] += 1
        harness.check_unchanged(before, harness.snapshot(tmp_path), f"[{label}] the folder")
        tally.invariants["I7 nothing written"] += 1
        shutil.rmtree(folder)
    with capsys.disabled():
        print(f"\nfuzz records: {tally.summary()}")
        for kind, example in sorted(crashes.items()):
            print(f"  report crashes with {kind}: {example}")
    assert set(crashes) <= KNOWN_RECORD_CRASHES, (
        "report crashed on records (build/results/, the smoke helper's):\n"
        + "\n".join(crashes.values())
    )
