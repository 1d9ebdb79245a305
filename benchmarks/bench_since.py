"""How fast `ci-tools matrix --since REF` is on upstream's largest branch (issue 31, item 2).

    python benchmarks/bench_since.py [--runs N] [--baseline CHECKOUT]

The fixture: the test catalog `tests/data/upstream/pytorch-2.10-python313.yaml` (the 237
recipe names of upstream barstoolbluz/build-pytorch, branch pytorch-2.10-python313) rendered
by `ci-tools generate` into a scratch git repository with this checkout's `nix/`, and a
history of a few commits: a docs change, one recipe's build changed, a shared Nix file no
recipe imports added. The figures, each the median wall-clock of a fresh process:

1. `ci-tools matrix --since HEAD~3` (stacks) and with `--group none`, with `nix-instantiate`
   on PATH (Nix's parse) when the machine has it; goal: <= 250 ms each.
2. The same after one more commit that leaves one recipe unparsable (Nix refuses it): it
   should cost about one parse call more, not one a stack.

Each is also given as a ratio to `python -c pass` on the same machine, runs interleaved so
that a busy moment hits all alike. `--baseline CHECKOUT` (another checkout of ci-tools, e.g.
`git worktree add /tmp/base main`) times its ci_tools on the same fixture in the same runs,
before/after from one machine at one time. Every command runs a copy of ci_tools without
`__pycache__`, as a fresh checkout has it (with PYTHONDONTWRITEBYTECODE set, as on the
machine these figures were first taken on, every start compiles every module it imports), and
a copy compiled to bytecode, as `pip install .` leaves it for the workflow's plan job. It exits 1 only when an output is wrong (the two
checkouts' matrices differ, or the expected stacks are not scheduled), never for a timing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = REPO / "tests" / "data" / "upstream" / "pytorch-2.10-python313.yaml"
BRANCH = "pytorch-2.10-python313"
GOAL_S = 0.25
CHANGED = "pytorch-python313-cuda12_8-sm90-avx512"  # the recipe the history changes
BROKEN = "pytorch-python313-cpu-avx2"  # the recipe the last commit breaks
PINNED = "sha256 = null;"
# The copy compiled to bytecode: what `pip install .` gives the workflow's plan job, and an
# editable install from its second start (without PYTHONDONTWRITEBYTECODE).
BYTECODE = "this, bytecode as pip installs it"


def git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    done = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=root,
        env={**_base_env(), **env},
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GIT_"))}


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def fixture(root: Path) -> None:
    """The rendered upstream branch with a history of four commits (see the docstring)."""
    root.mkdir()
    git(root, "init", "-q", "-b", BRANCH)
    shutil.copy(UPSTREAM, root / "catalog.yaml")
    shutil.copytree(REPO / "nix", root / "nix")
    env = {**_base_env(), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "ci_tools", "generate", "--branch", BRANCH],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"ci-tools generate in {root}: exit {done.returncode}: {done.stderr}")
    commit(root, "the rendered branch")
    (root / "README.md").write_text("# docs only\n", encoding="utf-8")
    commit(root, "docs")
    recipe = root / ".flox" / "pkgs" / f"{CHANGED}.nix"
    text = recipe.read_text(encoding="utf-8")
    if PINNED not in text:
        raise SystemExit(f"{recipe}: no {PINNED!r} to change; the fixture needs updating")
    recipe.write_text(text.replace(PINNED, 'sha256 = "sha256-bench";', 1), encoding="utf-8")
    commit(root, "one recipe's build changes")
    (root / "nix" / "unused.nix").write_text("{ }: { }\n", encoding="utf-8")
    commit(root, "a shared Nix file nothing imports")


def break_one(root: Path) -> None:
    recipe = root / ".flox" / "pkgs" / f"{BROKEN}.nix"
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\n{ unparsable = ; }\n", "utf-8")
    commit(root, "one recipe Nix cannot parse")


@dataclass(frozen=True)
class Case:
    label: str
    argv: tuple[str, ...]


CASES = (
    Case("--since HEAD~3", ("--since", "HEAD~3")),
    Case("--since HEAD~3 --group none", ("--since", "HEAD~3", "--group", "none")),
)
BROKEN_CASE = Case("--since HEAD~1, one recipe unparsable", ("--since", "HEAD~1"))


def copy_code(checkout: Path, into: Path, *, compiled: bool = False) -> Path:
    """A copy of the checkout's ci_tools without `__pycache__`, as a fresh clone has it, or
    `compiled` to bytecode, as `pip install .` (the workflow's plan job) leaves it."""
    shutil.copytree(
        checkout / "ci_tools", into / "ci_tools", ignore=shutil.ignore_patterns("__pycache__")
    )
    if compiled:
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(into)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return into


def call(site: Path, root: Path, case: Case) -> tuple[float, float, str]:
    """Wall-clock seconds, CPU seconds (the process and its children: git, Nix) and stdout."""
    argv = [sys.executable, "-P", "-m", "ci_tools", "matrix", *case.argv]
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        argv, cwd=root, env={**_base_env(), "PYTHONPATH": str(site)}, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} in {root}: exit {done.returncode}: {done.stderr}")
    return seconds, _children_cpu() - cpu, done.stdout


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pass_time() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=_base_env())
    return time.perf_counter() - started


Medians = dict[tuple[str, str], tuple[float, float]]  # (checkout, case) -> wall, CPU


def measure(
    sites: dict[str, Path], root: Path, cases: Sequence[Case], runs: int
) -> tuple[float, Medians, list[str]]:
    """Medians of `python -c pass` and of each (checkout, case); what is wrong."""
    outputs: dict[tuple[str, str], str] = {}
    for name, site in sites.items():  # warm the file-system caches
        for case in cases:
            outputs[name, case.label] = call(site, root, case)[2]
    wrong = [
        f"{case.label}: the matrices of {' and '.join(sites)} differ"
        for case in cases
        if len({outputs[name, case.label] for name in sites}) > 1
    ]
    base: list[float] = []
    times: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in outputs}
    for _ in range(runs):
        base.append(pass_time())
        for name, site in sites.items():
            for case in cases:
                times[name, case.label].append(call(site, root, case)[:2])
    medians = {
        key: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v))
        for key, v in times.items()
    }
    return statistics.median(base), medians, wrong


def report(base: float, medians: Medians, goal: bool) -> None:
    """Wall-clock, its ratio to `python -c pass`, and CPU time (which a loaded machine
    inflates less than wall-clock)."""
    for (name, label), (seconds, cpu) in medians.items():
        verdict = f" (goal <= {GOAL_S * 1000:.0f} ms: {'met' if seconds <= GOAL_S else 'MISSED'})"
        print(
            f"since  {name}: matrix {label}: {seconds * 1000:.0f} ms; ratio "
            f"{seconds / base:.1f}x{verdict if goal else ''}; CPU {cpu * 1000:.0f} ms"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=11, help="runs per figure (median)")
    parser.add_argument("--baseline", type=Path, help="another ci-tools checkout, timed alike")
    args = parser.parse_args(argv)
    has_nix = shutil.which("nix-instantiate") is not None
    print(
        f"python {sys.version.split()[0]}; parse: "
        f"{'Nix' if has_nix else 'raw bytes (this machine has no nix-instantiate)'}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-since-") as tmp:
        work = Path(tmp)
        sites = {"this": copy_code(REPO, work / "this")}
        sites[BYTECODE] = copy_code(REPO, work / "this-compiled", compiled=True)
        if args.baseline is not None:
            sites = {
                "baseline": copy_code(args.baseline, work / "baseline"),
                f"baseline, {BYTECODE.removeprefix('this, ')}": copy_code(
                    args.baseline, work / "baseline-compiled", compiled=True
                ),
                **sites,
            }
        root = work / "repo"
        fixture(root)
        base, medians, wrong = measure(sites, root, CASES, args.runs)
        print(f"since  python -c pass: {base * 1000:.0f} ms")
        report(base, medians, goal=True)
        if (stacks := call(sites["this"], root, CASES[0])[2].count('"name"')) != 1:
            wrong.append(f"--since HEAD~3 scheduled {stacks} stacks, expected 1")
        break_one(root)
        base, medians, more = measure(sites, root, [BROKEN_CASE], args.runs)
        report(base, medians, goal=False)
        wrong += more
    for problem in wrong:
        print(f"wrong: {problem}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
