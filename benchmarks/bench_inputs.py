"""What hostile input sizes cost: parse time of hostile YAML, memory of huge child output.

    python benchmarks/bench_inputs.py [--quick]

YAML: the shapes issue 20 found slow (an 800 kB line took 10-23 s, huge flow sequences
39-60+ s, a 3.9 MB file over 60 s), each parsed by `yamlsrc.parse_yaml` to its answer (a value
or a refusal naming file:line); goal: each under 1 s. Child output: the peak memory `proc`
adds reading a 256 MiB line (`stream`, as `flox build` prints it) and 256 MiB of output
(`run`, as `nvidia-smi` might), measured in a fresh interpreter; goal: under 64 MiB each,
where the audit saw 788 MB and 619 MB. `--quick`: 16 MiB instead of 256 (for the test).
Exit 1 when a goal is missed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ci_tools.base.errors import SourceError
from ci_tools.catalog import yamlsrc

ROOT = Path(__file__).resolve().parent.parent
YAML_GOAL_SECONDS = 1.0
MEMORY_GOAL_MIB = 64


def yaml_cases() -> dict[str, Callable[[], str]]:
    base = (ROOT / "catalog.yaml").read_text(encoding="utf-8")
    return {
        "800 kB comment line": lambda: base + "#" + "x" * 800_000 + "\n",
        "800 kB value": lambda: base + "junk: " + "x" * 800_000 + "\n",
        "3.9 MB of 1 kB lines": lambda: base + ("# " + "y" * 1000 + "\n") * 3800,
        "flow list, 2M values": lambda: "a: [" + ",".join(["1"] * 1_900_000) + "]\n",
        "flow mapping, 300k entries": lambda: (
            "a: {" + ",".join(f"k{i}: 1" for i in range(300_000)) + "}\n"
        ),
        "block list, 900k items": lambda: "a:\n" + "- x\n" * 900_000,
        "19k values (under the bound)": lambda: "a: [" + ",".join(["1"] * 19_000) + "]\n",
    }


def time_yaml() -> list[tuple[str, float, str]]:
    rows = []
    for name, make in yaml_cases().items():
        text = make()
        started = time.perf_counter()
        try:
            yamlsrc.parse_yaml(text, "catalog.yaml")
            answer = "parsed"
        except SourceError as exc:
            answer = str(exc.problems[0])[:60]
        rows.append((name, time.perf_counter() - started, answer))
    return rows


# Runs in a fresh interpreter: the peak of what Python allocated (KiB) reading `mib` MiB.
_PROBE = """\
import sys, tracemalloc
from ci_tools.base import proc
mode, mib = sys.argv[1], int(sys.argv[2])
writer = ("import sys\\nfor _ in range(%d): sys.stdout.buffer.write(b'y' * (1 << 20))\\n" % mib)
tracemalloc.start()
if mode == "stream":
    proc.stream([sys.executable, "-c", writer], on_line=lambda line: None)
else:
    proc.run([sys.executable, "-c", writer])
print(tracemalloc.get_traced_memory()[1] // 1024)
"""


def memory(mode: str, mib: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode, str(mib)],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.strip()) / 1024


def main(argv: list[str]) -> int:
    mib = 16 if "--quick" in argv else 256
    met = True
    print(f"{'YAML input':<32} {'seconds':>8}  answer")
    for name, seconds, answer in time_yaml():
        met &= seconds <= YAML_GOAL_SECONDS
        print(f"{name:<32} {seconds:8.2f}  {answer}")
    print(f"goal: each under {YAML_GOAL_SECONDS:.0f} s")
    print(f"\n{'child output':<32} {'MiB added':>9}")
    for mode, what in (("stream", f"one {mib} MiB line (stream)"), ("run", f"{mib} MiB (run)")):
        added = memory(mode, mib)
        met &= added <= MEMORY_GOAL_MIB
        print(f"{what:<32} {added:9.1f}")
    print(f"goal: under {MEMORY_GOAL_MIB} MiB each: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
