"""`ci-tools detect`: recommend the variant that fits this machine (or the one described).

Host facts come from hostinfo unless an override names them; with an override nothing is read
from the host for that fact. The decision is detect.detect(); this module only parses, reads
and prints.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from ci_tools.base.errors import InputError, log_lines, printable
from ci_tools.catalog import grammar
from ci_tools.catalog.model import Platform
from ci_tools.commands import _common
from ci_tools.host import answer, hostinfo
from ci_tools.host.detect import detect
from ci_tools.host.facts import MACHINES, Host, HostGpu

ORG_PLACEHOLDER = "<org>"
# ASCII only: `\d` would take fullwidth digits, which nothing downstream can read as a version.
_CAPABILITY = re.compile(r"[0-9]{1,3}\.[0-9]{1,2}", re.ASCII)
_FLAG = re.compile(r"[a-z0-9_.]{1,32}", re.ASCII)


def _org(text: str) -> str:
    """`--org` is printed into `flox install ORG/NAME`: a FloxHub handle, nothing a shell reads."""
    if text == ORG_PLACEHOLDER:
        return text
    why = grammar.ORG.problem(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{printable(text)!r} {why}")
    return text


def configure(parser: argparse.ArgumentParser) -> None:
    _common.add_catalog_option(parser)
    _common.add_branch_option(parser, "the branch to recommend from")
    parser.add_argument(
        "--workload",
        default="general",
        metavar="W",
        help="general (default), or a workload an ISA of the catalog is for: bf16-training, "
        "int8-inference",
    )
    parser.add_argument(
        "--package",
        default="pytorch",
        metavar="P",
        help="the package to recommend (default: pytorch)",
    )
    parser.add_argument(
        "--org",
        default=ORG_PLACEHOLDER,
        type=_org,
        help=f"the Flox organisation in the install line (default: the placeholder {ORG_PLACEHOLDER})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--gpu-cc",
        action="append",
        metavar="X.Y|none",
        help="the GPUs' compute capabilities instead of asking nvidia-smi; repeat or "
        "comma-separate for several GPUs; `none` for no GPU",
    )
    parser.add_argument(
        "--cpu-flags",
        metavar="LIST",
        help="the CPU flags (/proc/cpuinfo `flags` or `Features`), comma or space separated, "
        "instead of reading /proc/cpuinfo",
    )
    parser.add_argument(
        "--machine",
        metavar="M",
        help=f"the machine instead of uname: {', '.join(MACHINES)}",
    )


def run(args: argparse.Namespace) -> int:
    catalog = _common.load(args)
    branch = args.branch or _common.default_branch(catalog, Path.cwd())
    host = _host(args)
    detection = detect(catalog, host, branch=branch, package=args.package, workload=args.workload)
    if args.json:
        print(json.dumps(answer.to_json(detection, args.org), indent=2))
    else:
        print(answer.render_text(detection, args.org), end="")
        in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
        for warning in detection.warnings:
            # Host text (nvidia-smi names) is quoted in warnings: never a workflow command.
            for line in log_lines("ci-tools: warning: ", warning, in_actions=in_actions):
                print(line, file=sys.stderr)
        if not detection.ok:
            print(
                f"ci-tools: error: no {detection.package} variant on {detection.branch} "
                "fits this machine",
                file=sys.stderr,
            )
    return detection.exit_code


def _host(args: argparse.Namespace) -> Host:
    machine = _machine(args.machine) if args.machine is not None else hostinfo.read_machine()
    gpu_override = _gpu_override(args.gpu_cc) if args.gpu_cc is not None else None
    flag_override = _flags(args.cpu_flags) if args.cpu_flags is not None else None
    if MACHINES.get(machine) is Platform.AARCH64_DARWIN:
        given = [o for o, v in (("--gpu-cc", args.gpu_cc), ("--cpu-flags", args.cpu_flags)) if v]
        if given:
            raise InputError(
                f"{' and '.join(given)} {'do' if len(given) > 1 else 'does'} not apply to an "
                "arm64-darwin machine, whose build "
                "uses Metal (MPS); to advise a Linux machine pass --machine x86_64 or aarch64"
            )
        return Host(machine=machine)
    warnings = []
    if gpu_override is not None:
        gpus, note = gpu_override, "no NVIDIA GPU (--gpu-cc none)"
    else:
        reading = hostinfo.read_gpus()
        gpus, note = reading.gpus, reading.note
        if reading.warning:
            warnings.append(reading.warning)
    if flag_override is not None:
        flags = flag_override
    else:
        cpu = hostinfo.read_cpu_flags()
        flags = cpu.flags
        if cpu.warning:
            warnings.append(cpu.warning)
    return Host(
        machine=machine, cpu_flags=flags, gpus=gpus, no_gpu_note=note, warnings=tuple(warnings)
    )


def _machine(value: str) -> str:
    if value not in MACHINES:
        raise InputError(f'--machine: unknown machine "{value}"; use one of {", ".join(MACHINES)}')
    return value


def _gpu_override(values: list[str]) -> tuple[HostGpu, ...]:
    items = [item.strip() for value in values for item in value.split(",")]
    if items == ["none"]:
        return ()
    gpus = []
    for item in items:
        if not _CAPABILITY.fullmatch(item):
            raise InputError(
                f'--gpu-cc: "{item}" is not a compute capability; use X.Y as nvidia-smi '
                "prints it (e.g. 9.0, 12.1), comma-separated or repeated, or `none` alone"
            )
        gpus.append(HostGpu(name=None, capability=item))
    return tuple(gpus)


def _flags(value: str) -> frozenset[str]:
    flags = value.replace(",", " ").split()
    bad = [f for f in flags if not _FLAG.fullmatch(f)]
    if bad or not flags:
        shown = f'"{bad[0]}" is not a cpuinfo flag' if bad else "no flags given"
        raise InputError(
            f"--cpu-flags: {shown}; give lowercase /proc/cpuinfo flags, comma or space "
            "separated (e.g. avx,avx2,fma,f16c)"
        )
    return frozenset(flags)
