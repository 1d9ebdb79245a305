"""How fast `ci-tools matrix` is, as a person or a workflow runs it (issue 3, item 8).

    python benchmarks/bench_matrix.py [--runs N] [--pythons P] [--sms S]

1. Cold start: the median wall-clock of `python -m ci_tools matrix --branch main` in this
   checkout (issue 17), with `nix-instantiate` on PATH when the machine has it, as a ratio
   to `python -c pass` on the same machine. Goal: <= 6x (the matrix path imports neither
   PyGithub nor jinja2, and computes no fingerprint). Also, each as a ratio, without Nix on
   PATH; with `--github-output` (the workflow's call: it fingerprints every stack; goal:
   <= 10x); and as pip installs it (its modules compiled to bytecode beforehand, as an
   editable install has them from its second start; goal: <= 6x). The copies without
   `__pycache__` compile every module at every start only where PYTHONDONTWRITEBYTECODE is
   set (the first line says); elsewhere the first run writes the bytecode.
2. Scale: `ci-tools matrix --github-output --max-shards 64` over a generated catalog of P
   Pythons x S SMs (the defaults give 5,187 variants on one branch), once per package and
   once per stack. Goal: <= 1 s each; and the sharding must be right: `count`, `shards`, no
   shard over 256, the matrices within GitHub's 1 MB of job outputs (UTF-16), every
   scheduled variant in exactly one entry of one shard, and the rest named as waiting for
   the next run (issue 19); without --max-shards, at most 4 x 256 entries, the rest waiting.

3. Fingerprints (issue 10), with `--fingerprint-repo PATH` (a git checkout of a build
   repository, e.g. a clone of barstoolbluz/build-pytorch): the median wall-clock of
   `ci-tools matrix --group none --fingerprints` there with `nix-instantiate` on PATH
   (Nix's parse) and without it (raw bytes; PATH holds only git), per run and per variant.
   The difference is what parsing costs; both include reading the tree through git.

It prints its figures; it exits 1 only if an output is wrong, never because of a timing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLD_GOAL = 6.0
GITHUB_OUTPUT_GOAL = 10.0  # issue 31: the workflow's call, which fingerprints every stack
SCALE_GOAL_S = 1.0
SHARD_SIZE = 256
# GitHub: "Outputs can be a maximum of 1 MB per job ... approximated based on UTF-16".
OUTPUT_LIMIT = 1_000_000
ISAS = ("avx2", "avx512", "avx512bf16", "avx512vnni", "armv8_2", "armv9")
# The Pythons a catalog may name: those the nixpkgs pins have (catalog/grammar.py).
PYTHONS = ("3.11", "3.12", "3.13")
X86_FLAGS = "avx, avx2, fma, f16c, avx512f, avx512dq, avx512vl, avx512bw, avx512_vnni"
ARM_FLAGS = "fphp, asimdhp, asimddp, sve, sve2"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra or {})
    return env


def wall(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


MATRIX = ("-P", "-m", "ci_tools", "matrix", "--branch", "main")


@dataclass(frozen=True)
class Command:
    label: str
    argv: tuple[str, ...]
    env: dict[str, str]
    goal: float | None = None  # the most it may take, as a ratio to `python -c pass`


def cold_start_commands(tmp: Path, checkout: Path = REPO) -> list[Command]:
    """The matrix as a person runs it, without Nix, as the workflow runs it, and as pip
    installs it, with `checkout`'s ci_tools; `tmp` holds what they need (copies of
    ci_tools, a PATH without Nix, $GITHUB_OUTPUT).

    Each runs a copy of ci_tools, as a fresh checkout has it (no `__pycache__`: a cache an
    earlier run left in this checkout would hide the compiling a PYTHONDONTWRITEBYTECODE
    machine does at every start), or compiled to bytecode as pip installs it; -P keeps the
    checkout's own ci_tools off sys.path. They run in the checkout, on its catalog."""
    fresh, compiled = tmp / "fresh", tmp / "compiled"
    for site in (fresh, compiled):
        shutil.copytree(
            checkout / "ci_tools", site / "ci_tools", ignore=shutil.ignore_patterns("__pycache__")
        )
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(compiled)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    git = shutil.which("git")
    has_nix = shutil.which("nix-instantiate") is not None
    label = "ci-tools matrix --branch main" + ("" if has_nix else " (this machine has no Nix)")
    commands = [Command(label, MATRIX, child_env({"PYTHONPATH": str(fresh)}), COLD_GOAL)]
    if git is not None and has_nix:
        only_git = tmp / "bin"
        only_git.mkdir()
        (only_git / "git").symlink_to(git)
        env = child_env({"PYTHONPATH": str(fresh), "PATH": str(only_git)})
        commands.append(Command("  the same without nix-instantiate on PATH", MATRIX, env))
    env = child_env({"PYTHONPATH": str(fresh), "GITHUB_OUTPUT": str(tmp / "github-output")})
    argv = (*MATRIX, "--github-output")
    label = "  the same with --github-output (fingerprints)"
    commands.append(Command(label, argv, env, GITHUB_OUTPUT_GOAL))
    env = child_env({"PYTHONPATH": str(compiled)})
    label = "  the same as pip installs it (bytecode compiled)"
    commands.append(Command(label, MATRIX, env, COLD_GOAL))
    return commands


def cold_start(runs: int, commands: Sequence[Command]) -> tuple[float, list[float]]:
    """Medians of `python -c pass` and of each command, runs interleaved so that a busy
    moment of the machine hits all alike."""
    for command in commands:  # file-system caches, as on a runner that has checked out
        wall(command.argv, REPO, command.env)
    base: list[float] = []
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        base.append(wall(["-c", "pass"], REPO, child_env()))
        for command, samples in zip(commands, times, strict=True):
            samples.append(wall(command.argv, REPO, command.env))
    return statistics.median(base), [statistics.median(t) for t in times]


def report_cold_start(runs: int, baseline: Path | None = None) -> None:
    """The cold-start figures; with `baseline` (another checkout), its commands too, in the
    same runs: before and after from one machine at one time."""
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        commands = []
        if baseline is not None:
            (Path(tmp) / "baseline").mkdir()
            commands = [
                replace(c, label=f"baseline: {c.label.strip()}")
                for c in cold_start_commands(Path(tmp) / "baseline", baseline)
            ]
        commands += cold_start_commands(Path(tmp))
        base, medians = cold_start(runs, commands)
    print(f"cold start  python -c pass: {base * 1000:.0f} ms")
    for command, seconds in zip(commands, medians, strict=True):
        ratio = seconds / base
        limit = command.goal
        verdict = "met" if limit is not None and ratio <= limit else "MISSED"
        goal = f" (goal <= {limit:.0f}x: {verdict})" if limit is not None else ""
        print(f"cold start  {command.label}: {seconds * 1000:.0f} ms; ratio {ratio:.1f}x{goal}")


@dataclass(frozen=True)
class Synthetic:
    catalog: str
    runners: str
    packages: frozenset[str]  # every variant name the branch has
    stacks: int


def synthetic(pythons: int, sms: int) -> Synthetic:
    """One branch, `pythons` Pythons x (`sms` SMs x six ISAs + six CPU ISAs), PyTorch and
    TorchVision, plus darwin-mps for PyTorch. Names are spelled here, not by ci_tools, so
    the check does not trust the code it checks."""
    shipped = (REPO / "catalog.yaml").read_text(encoding="utf-8")
    head = shipped[: shipped.index("\ngpus:")]  # packages and isas, as shipped
    gpu_names = [f"sm{1000 + i}" for i in range(sms)]
    gpus = "".join(
        f'  {sm}: {{capability: "{sm[2:-1]}.{sm[-1]}", family: synthetic, hardware: [x]}}\n'
        for sm in gpu_names
    )
    versions = list(PYTHONS[:pythons])
    gpu_block = "".join(f"          {sm}: *isas\n" for sm in gpu_names)
    variant_block = (
        "      pytorch:\n"
        f"        cpu: &isas [{', '.join(ISAS)}]\n"
        f"        gpu:\n{gpu_block}"
        "        darwin_mps: true\n"
        "      torchvision:\n"
        "        cpu: *isas\n"
        f"        gpu:\n{gpu_block}"
    )
    catalog = (
        f"{head}\ngpus:\n{gpus}\nbranches:\n  synthetic:\n"
        '    versions: {pytorch: "2.8.0", torchvision: "0.23.0"}\n'
        '    cuda: "12.8"\n'
        f"    python: [{', '.join(json.dumps(v) for v in versions)}]\n"
        "    min_driver: 550\n"
        "    nixpkgs: {rev: fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3}\n"
        "    cuda_packages: cudaPackages_12_8\n"
        f"    variants:\n{variant_block}"
    )
    runners = (
        "builders:\n"
        f"  x86_64-linux: {{labels: [self-hosted, Linux, X64], cpu_flags: [{X86_FLAGS}]}}\n"
        f"  aarch64-linux: {{labels: [self-hosted, Linux, ARM64], cpu_flags: [{ARM_FLAGS}]}}\n"
        "  aarch64-darwin: {labels: [self-hosted, macOS, ARM64]}\n"
        "test_runners:\n"
        + "".join(
            f"  - {{labels: [self-hosted, Linux, X64, gpu-{sm}], platform: x86_64-linux, "
            f"sm: {sm}, cpu_flags: [{X86_FLAGS}]}}\n"
            for sm in gpu_names[:3]
        )
    )
    names: set[str] = set()
    for version in versions:
        tag = "python" + version.replace(".", "")
        for package in ("pytorch", "torchvision"):
            names.update(f"{package}-{tag}-cpu-{isa}" for isa in ISAS)
            names.update(f"{package}-{tag}-cuda12_8-{sm}-{isa}" for sm in gpu_names for isa in ISAS)
        names.add(f"pytorch-{tag}-darwin-mps")
    return Synthetic(
        catalog=catalog,
        runners=runners,
        packages=frozenset(names),
        stacks=pythons * (sms * len(ISAS) + len(ISAS) + 1),
    )


def check_outputs(
    output: Path, done: subprocess.CompletedProcess[str], want: Synthetic, group: str
) -> list[str]:
    """What is wrong with the step outputs and the printed matrix; empty if nothing."""
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    count, shards = int(values["count"]), int(values["shards"])
    total = len(want.packages) if group == "none" else want.stacks
    wrong = []
    waiting = re.search(r"(\d+) of (\d+) stacks wait for the next run", done.stderr)
    waits = int(waiting[1]) if waiting else 0
    if count + waits != total or (waiting and int(waiting[2]) != total):
        wrong.append(f"count={count} and {waits} waiting, expected {total} in all")
    if shards != math.ceil(count / SHARD_SIZE):
        wrong.append(f"shards={shards}, expected {math.ceil(count / SHARD_SIZE)}")
    size = sum(len(values[f"matrix-{i}"].encode("utf-16-le")) for i in range(max(shards, 4)))
    if size > OUTPUT_LIMIT:
        wrong.append(f"the matrices take {size} bytes of job outputs, over {OUTPUT_LIMIT}")
    entries = []
    for index in range(max(shards, 4)):
        shard = json.loads(values[f"matrix-{index}"])["include"]
        if not (0 < len(shard) <= SHARD_SIZE if index < shards else not shard):
            wrong.append(f"matrix-{index} holds {len(shard)} entries")
        entries.extend(shard)
    packages = [p for e in entries for p in e["packages"]]
    if len(packages) != len(set(packages)) or not set(packages) <= want.packages:
        wrong.append(f"{len(packages)} packages in the shards ({len(set(packages))} distinct)")
    if not waiting and set(packages) != want.packages:
        wrong.append(f"{len(set(packages))} variants in the shards, expected {len(want.packages)}")
    if len({e["name"] for e in entries}) != len(entries):
        wrong.append("entry names repeat")
    if json.loads(done.stdout)["include"] != entries:
        wrong.append("stdout differs from the shards put together")
    return wrong


def run_matrix(root: Path, output: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`ci-tools matrix --github-output` on the synthetic branch, from a fresh process."""
    argv = ["-m", "ci_tools", "matrix", "--catalog", str(root / "catalog.yaml")]
    argv += ["--branch", "synthetic", "--github-output", *options]
    env = child_env({"GITHUB_OUTPUT": str(output)})
    return subprocess.run(
        [sys.executable, *argv], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def scale(want: Synthetic, group: str, runs: int, root: Path) -> tuple[float, list[str], str]:
    """The median time, what is wrong, and `count`/`shards` as the outputs say."""
    output = root / f"output-{group}"
    times, wrong = [], []
    for _ in range(runs):
        output.write_text("")
        started = time.perf_counter()
        done = run_matrix(root, output, "--group", group, "--max-shards", "64")
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            return math.inf, [f"exit {done.returncode}: {done.stderr.strip()}"], "-"
        wrong = check_outputs(output, done, want, group)
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return statistics.median(times), wrong, f"{values['count']} in {values['shards']} shards"


def waits_beyond_four_shards(root: Path, want: Synthetic) -> list[str]:
    """Without --max-shards, one run takes 4 x 256 entries and names the rest as waiting."""
    output = root / "four"
    output.write_text("")
    done = run_matrix(root, output, "--group", "none")
    if done.returncode != 0:
        return [f"more than 4 shards: exit {done.returncode}, expected 0 with the rest waiting"]
    wrong = check_outputs(output, done, want, "none")
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    if values["count"] != str(4 * SHARD_SIZE):
        wrong.append(f"without --max-shards: count={values['count']}, expected {4 * SHARD_SIZE}")
    return wrong


def fingerprint_cost(repo: Path, runs: int) -> list[str]:
    """Figure 3: the matrix with and without Nix's parser on PATH."""
    git = shutil.which("git")
    if git is None or shutil.which("nix-instantiate") is None:
        return ["figure 3 needs git and nix-instantiate on PATH"]
    argv = [sys.executable, "-m", "ci_tools", "matrix", "--group", "none", "--fingerprints"]
    with tempfile.TemporaryDirectory(prefix="bench-path-") as tmp:
        (Path(tmp) / "git").symlink_to(git)
        medians = {}
        counts = set()
        for label, path in (("with Nix", os.environ["PATH"]), ("without Nix", tmp)):
            env = child_env({"PATH": path})
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
                times.append(time.perf_counter() - started)
                if done.returncode != 0:
                    return [f"matrix in {repo} ({label}): exit {done.returncode}: {done.stderr}"]
                counts.add(len(json.loads(done.stdout)["include"]))
            medians[label] = statistics.median(times)
    (variants,) = counts
    for label, seconds in medians.items():
        print(
            f"fingerprint {variants} variants of {repo}, {label}: {seconds * 1000:.0f} ms, "
            f"{seconds / variants * 1000:.2f} ms a variant"
        )
    extra = medians["with Nix"] - medians["without Nix"]
    print(
        f"fingerprint Nix's parse adds {extra * 1000:.0f} ms, {extra / variants * 1000:.2f} ms a variant"
    )
    return []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=11, help="runs per figure (median)")
    parser.add_argument(
        "--pythons",
        type=int,
        default=len(PYTHONS),
        choices=range(1, len(PYTHONS) + 1),
        help="Pythons in the synthetic branch",
    )
    # 3 Pythons x (143 SMs x 6 ISAs + 7) = 2,595 stacks, 5,187 variants: the scale the
    # figures have always been taken at (10 Pythons x 42 SMs gave 2,590 and 5,170).
    parser.add_argument("--sms", type=int, default=143, help="SMs in the synthetic branch")
    parser.add_argument(
        "--fingerprint-repo", type=Path, help="a build repository checkout for figure 3"
    )
    parser.add_argument(
        "--baseline", type=Path, help="another ci-tools checkout: its cold start, timed alike"
    )
    args = parser.parse_args(argv)

    print(
        f"python {sys.version.split()[0]} on {os.cpu_count()} CPUs; "
        f"bytecode cache {'off' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'on'}"
    )
    report_cold_start(args.runs, args.baseline)

    want = synthetic(args.pythons, args.sms)
    wrong: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-matrix-") as tmp:
        root = Path(tmp)
        (root / "catalog.yaml").write_text(want.catalog, encoding="utf-8")
        (root / "runners.yaml").write_text(want.runners, encoding="utf-8")
        for group, entries in (("none", len(want.packages)), ("stack", want.stacks)):
            seconds, problems, scheduled = scale(want, group, args.runs, root)
            verdict = "met" if seconds <= SCALE_GOAL_S else "MISSED"
            print(
                f"scale       {len(want.packages)} variants, --group {group}: {entries} entries, "
                f"{scheduled}, {seconds * 1000:.0f} ms (goal <= {SCALE_GOAL_S:.0f} s: "
                f"{verdict}); sharding {'right' if not problems else 'WRONG'}"
            )
            wrong += problems
        if len(want.packages) > 4 * SHARD_SIZE:
            wrong += waits_beyond_four_shards(root, want)
    if args.fingerprint_repo is not None:
        wrong += fingerprint_cost(args.fingerprint_repo, args.runs)
    for problem in wrong:
        print(f"wrong: {problem}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
