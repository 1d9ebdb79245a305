"""Preflight of a self-hosted runner, before a build job starts: flox, Nix and free disk.

Reads the `preflight` section of the runner inventory (runners.yaml): the least flox version
(1.14 reads FLOX_FLOXHUB_TOKEN, which CI publishing needs) and the free space a stack's build
needs. Garbage-collection policy: when the Nix store's disk is short, unreferenced store paths
are collected (`nix-store --gc --max-freed`, only as much as is missing; results still linked
from a workspace and profiles are GC roots and stay), then the space is measured again.
Each problem is one `::error::` annotation (escaped for workflow commands); exit 1 on any.
Python itself is checked by the step before (this script runs in ci-tools' virtualenv).

`--runner-dir DIR` also checks the Actions runner configured in DIR (2.327.1 or later:
ci_tools.host.runner_version). A maintainer passes it on the host, setting the runner up: a
job cannot check it, since a runner too old for the pinned actions fails at "Set up job",
before any step (this preflight included).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

from ci_tools.host import runner_version

GIB = 1024**3


def escape(text: str) -> str:
    """Workflow-command data escaping (actions/toolkit, core/src/command.ts escapeData)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def version(text: str) -> tuple[int, ...] | None:
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return None if match is None else tuple(int(g or 0) for g in match.groups())


def settings(inventory: Path) -> tuple[str, int, Path]:
    data = YAML(typ="safe").load(inventory.read_text(encoding="utf-8")) or {}
    section = data.get("preflight") or {}
    return (
        str(section.get("flox", "1.14")),
        int(section.get("min_free_gb", 60)),
        Path(str(section.get("store", "/nix/store"))),
    )


def free_bytes(path: Path) -> int:
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def check(inventory: Path) -> list[str]:
    least_flox, min_free_gb, store = settings(inventory)
    problems = []
    flox = shutil.which("flox")
    if flox is None:
        problems.append(f"flox is not on PATH; this runner needs flox >= {least_flox}")
    else:
        found = subprocess.run([flox, "--version"], capture_output=True, text=True, check=False)
        have = version(found.stdout)
        if have is None or have < (version(least_flox) or ()):
            problems.append(
                f"flox {found.stdout.strip() or '(no version)'} is older than {least_flox}"
            )
    nix_store = shutil.which("nix-store")
    if nix_store is None or shutil.which("nix") is None:
        problems.append("Nix is not on PATH (nix, nix-store); install Nix for the runner's user")
    need = min_free_gb * GIB
    free = free_bytes(store)
    if free < need and nix_store is not None:
        print(f"{free / GIB:.1f} GiB free under {store}; collecting Nix garbage")
        subprocess.run([nix_store, "--gc", "--max-freed", str(need - free)], check=False)
        free = free_bytes(store)
    if free < need:
        problems.append(
            f"{free / GIB:.1f} GiB free under {store}, a build needs {min_free_gb} GiB "
            "(runners.yaml preflight.min_free_gb); free space on the runner"
        )
    return problems


def runner_problem(program: Path) -> str | None:
    """What is wrong with the Actions runner whose listener is `program`; None: nothing."""
    try:
        found = subprocess.run(
            [str(program), "--version"], capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{program} --version did not run: {exc}"
    return runner_version.problem(found.stdout, found.returncode, program)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", type=Path, default=Path("runners.yaml"))
    parser.add_argument(
        "--runner-dir",
        type=Path,
        help="also check the Actions runner configured in this folder (run on the host)",
    )
    args = parser.parse_args()
    program = runner_version.listener(args.runner_dir) if args.runner_dir else None
    if program is not None and not program.is_file():  # a wrong argument: exit 2
        print(
            f"::error::{escape(str(args.runner_dir))}: no bin/Runner.Listener there; pass "
            "--runner-dir the folder the Actions runner was configured in (where config.sh "
            "and .runner are)"
        )
        return 2
    problems = check(args.inventory)
    runner = runner_problem(program) if program is not None else None
    problems += [runner] if runner is not None else []
    for problem in problems:
        print(f"::error::{escape(problem)}")
    if not problems:
        checked = "flox, Nix, free disk and the Actions runner" if args.runner_dir else ""
        print(f"preflight: {checked or 'flox, Nix and free disk'} are in order")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
