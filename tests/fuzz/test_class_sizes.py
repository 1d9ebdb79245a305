"""The size class (issue 20 item 4): huge or endless input from every source ci-tools reads.

Sources: a build log (`flox build` printing it, through `ci-tools build`, then `report`), the
answer of `nvidia-smi` (through `ci-tools detect`), a result record and a `--planned` file
(through `report`), `catalog.yaml` (through `matrix`), and `/proc/cpuinfo` (read by the host
reader). Shapes: one huge line, many ordinary lines, 200 kB lines (the audit's build log), no
line break at all, binary noise, a flood of carriage returns; for the catalog, a huge comment
line, a huge value, a flow list of many values.

Invariants:
  S1 every run ends within its time bound with exit 0, 1 or 2, never a traceback;
  S2 the peak memory of ci-tools stays under PEAK_MIB, whatever the size of the input;
  S3 a build's outcome is never lost: the build exits 0, its record is under
     RECORD_BYTES and `report` reads it;
  S4 an input over its bound is refused (exit 2) naming the file and the bound.

Short mode (the normal suite): every source at 1 and 16 MiB in one or two shapes;
CI_TOOLS_FUZZ=long: every source and shape at 1, 16, 64 and 256 MiB.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest

from ci_tools.build import flox_build, report, results
from ci_tools.host import hostcpu, hostinfo

from . import harness
from .classes import Measured, Table, run_measured

MIB = 1 << 20
PEAK_MIB = 256
RECORD_BYTES = flox_build.LOG_TAIL_BYTES + 8192
SHORT_SIZES, LONG_SIZES = (1, 16), (1, 16, 64, 256)
SHAPES = ("one-line", "lines", "200kB-lines", "no-newline", "binary", "carriage-returns")
SHORT_SHAPES = ("one-line", "200kB-lines")
VARIANT = "pytorch-python313-cpu-avx2"

# Prints SIZE MiB of SHAPE to stdout; as `flox`, then leaves the result link `flox build` does.
TOOL = """\
#!{python}
import os, sys
from pathlib import Path

shape, total = os.environ["SHAPE"], int(os.environ["SIZE_MIB"]) << 20
unit = {{
    "one-line": b"y" * 65536, "no-newline": b"y" * 65536,
    "lines": (b"x" * 199 + b"\\n") * 328, "200kB-lines": b"z" * 199999 + b"\\n",
    "binary": bytes(range(256)) * 256, "carriage-returns": b"progress 42%\\r" * 4096,
}}[shape]
out, sent = sys.stdout.buffer, 0
while sent < total:
    out.write(unit)
    sent += len(unit)
if shape == "one-line":
    out.write(b"\\n")
out.flush()
if Path(sys.argv[0]).name == "flox":
    store = Path(os.environ["STORE"]) / "0000-x"
    store.mkdir(parents=True, exist_ok=True)
    link = Path.cwd() / ("result-" + sys.argv[2])
    if link.is_symlink():
        link.unlink()
    link.symlink_to(store)
"""


def _tools(folder: Path) -> dict[str, str]:
    bindir = folder / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for name in ("flox", "nvidia-smi"):
        (bindir / name).write_text(TOOL.format(python=sys.executable), encoding="utf-8")
        (bindir / name).chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "STORE": str(folder)}


def _write(path: Path, shape: str, mib: int, head: bytes = b"") -> None:
    """A file of `mib` MiB of `shape`, after `head`."""
    rng = random.Random(mib)
    with path.open("wb") as handle:
        handle.write(head)
        for _ in range(mib * 16):
            if shape == "binary":
                handle.write(rng.randbytes(65536))
            elif shape in ("one-line", "no-newline"):
                handle.write(b"y" * 65536)
            elif shape == "carriage-returns":
                handle.write(b"progress 42%\r" * 5041)
            else:
                width = 199_999 if shape == "200kB-lines" else 199
                handle.write((b"x" * width + b"\n") * (65536 // (width + 1) or 1))


def _check(table: Table, kind: str, measured: Measured, label: str) -> None:
    table.add(kind, measured.run.code, measured.seconds, measured.peak_kib)
    assert not measured.timed_out, f"[{label}] did not end"
    harness.check_run(measured.run, label=label, tally=harness.Tally(), bad_input=None,
                      file_line=False)  # fmt: skip
    table.held["S1 ends, exit 0/1/2, no traceback"] += 1
    assert measured.peak_kib < PEAK_MIB * 1024, f"[{label}] {measured.peak_kib} KiB"
    table.held[f"S2 peak under {PEAK_MIB} MiB"] += 1


def _build_log(table: Table, folder: Path, shape: str, mib: int, label: str) -> None:
    env = {**_tools(folder), "SHAPE": shape, "SIZE_MIB": str(mib)}
    out = folder / "out"
    argv = ["build", "--catalog", str(harness.REPO_ROOT / "catalog.yaml"), "--branch", "main",
            VARIANT, "--results", str(out)]  # fmt: skip
    measured = run_measured(argv, folder, folder, env=env, timeout=600)
    _check(table, "build log", measured, label)
    assert measured.run.code == 0, f"[{label}] {measured.run.stderr[-2000:]}"
    path = results.result_path(out, VARIANT)
    assert path.stat().st_size < RECORD_BYTES, f"[{label}] record of {path.stat().st_size} bytes"
    report = run_measured(["report", str(out)], folder, folder)
    assert report.run.code == 0, f"[{label}] report: {report.run.stderr[-2000:]}"
    table.held["S3 the build's record is kept and read"] += 1


def _nvidia_smi(table: Table, folder: Path, shape: str, mib: int, label: str) -> None:
    env = {**_tools(folder), "SHAPE": shape, "SIZE_MIB": str(mib)}
    argv = ["detect", "--catalog", str(harness.REPO_ROOT / "catalog.yaml"), "--branch", "main"]
    measured = run_measured(argv, folder, folder, env=env, timeout=600)
    _check(table, "nvidia-smi", measured, label)
    assert measured.run.code == 0, f"[{label}] {measured.run.stderr[-2000:]}"
    assert "nvidia-smi" in measured.run.stdout + measured.run.stderr


def _refused_if_over(table: Table, measured: Measured, path: Path, limit: int, label: str) -> None:
    if path.stat().st_size > limit:
        assert measured.run.code == 2, f"[{label}] exit {measured.run.code}"
        assert str(path) in measured.run.stderr and f"larger than {limit}" in measured.run.stderr
        table.held["S4 over its bound: refused naming file and bound"] += 1


def _record(table: Table, folder: Path, shape: str, mib: int, label: str) -> None:
    out = folder / "out"
    out.mkdir()
    head = b'{"schema": 1, "variant": "x", "log": "' if shape != "binary" else b""
    path = out / f"{VARIANT}.result.json"
    _write(path, shape, mib, head)
    measured = run_measured(["report", str(out)], folder, folder, timeout=600)
    _check(table, "result record", measured, label)
    assert measured.run.code == 2
    _refused_if_over(table, measured, path, results.MAX_RECORD_BYTES, label)


def _planned(table: Table, folder: Path, shape: str, mib: int, label: str) -> None:
    out = folder / "out"
    out.mkdir()
    shutil.copy(sorted((harness.REPO_ROOT / "tests/data/results-cuda-12_9").glob("*.json"))[0], out)
    planned = folder / "planned"
    _write(planned, shape, mib)
    measured = run_measured(["report", str(out), "--planned", str(planned)], folder, folder,
                            timeout=600)  # fmt: skip
    _check(table, "--planned", measured, label)
    # Lines of x's are a plan of many variant names without records: report's exit 1 (a
    # planned variant failed), or 2 when the plan is refused.
    assert measured.run.code in (1, 2)
    _refused_if_over(table, measured, planned, report.MAX_PLANNED_BYTES, label)


def _catalog(table: Table, folder: Path, shape: str, mib: int, label: str) -> None:
    text = (harness.REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    size = min(mib * MIB, 4 * MIB - len(text) - 100)  # under the file bound: the parse counts
    extra = {
        "one-line": "#" + "y" * size + "\n",
        "lines": f"# {'x' * 197}\n" * (size // 200),
        "200kB-lines": f"# {'z' * 199_997}\n" * max(1, size // 200_000),
        "no-newline": "x_junk: " + "y" * size,
        "binary": "x_junk: [" + ",".join(["1"] * (size // 2)) + "]\n",
        "carriage-returns": "x_junk: {" + ",".join(f"k{i}: 1" for i in range(size // 12)) + "}\n",
    }[shape]
    (folder / "catalog.yaml").write_text(text + extra, encoding="utf-8")
    measured = run_measured(["matrix", "--branch", "main"], folder, folder, timeout=600)
    _check(table, "catalog.yaml", measured, label)
    assert measured.run.code in (0, 2)
    if measured.run.code == 2:
        assert "catalog.yaml:" in measured.run.stderr


def _cpuinfo(table: Table, folder: Path, shape: str, mib: int, label: str) -> None:
    path = folder / "cpuinfo"
    _write(path, shape, mib, head=b"processor\t: 0\nflags\t\t: ")
    tracemalloc.start()
    try:
        reading = hostinfo.read_cpu_flags(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    table.add("cpuinfo", 0, 0.0, peak // 1024)
    assert peak < PEAK_MIB * MIB // 4, f"[{label}] {peak} bytes"
    table.held[f"S2 peak under {PEAK_MIB} MiB"] += 1
    if path.stat().st_size > hostcpu.MAX_CPUINFO_BYTES:
        assert reading.warning is not None and "larger than" in reading.warning
        table.held["S4 over its bound: refused naming file and bound"] += 1


SOURCES = {
    "build log": _build_log,
    "nvidia-smi": _nvidia_smi,
    "result record": _record,
    "--planned": _planned,
    "catalog.yaml": _catalog,
    "cpuinfo": _cpuinfo,
}


def test_huge_inputs_from_every_source(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    table = Table("size class: huge input from every source")
    sizes, shapes = (LONG_SIZES, SHAPES) if fuzz_long else (SHORT_SIZES, SHORT_SHAPES)
    rng = random.Random(fuzz_seed + 21)
    cases = list(itertools.product(SOURCES, shapes, sizes))
    if not fuzz_long:  # one shape per source and size, picked by the seed
        cases = [(s, rng.choice(shapes), n) for s in SOURCES for n in sizes]
    for index, (source, shape, mib) in enumerate(cases):
        label = f"seed {fuzz_seed + 21} case {index}: {source}, {shape}, {mib} MiB"
        folder = tmp_path / f"case-{index}"
        folder.mkdir()
        SOURCES[source](table, folder, shape, mib, label)
        shutil.rmtree(folder)
    with capsys.disabled():
        print("\n" + table.render())
