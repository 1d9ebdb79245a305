"""`ci-tools detect`: recommend the variant that fits this machine (or the one described).

Host facts come from hostinfo unless an override names them: an option, else its environment
variable (for scripts); with an override nothing is read from the host for that fact. The
decision is detect.detect(); this module only parses, reads and prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base.errors import InputError, log_lines
from ci_tools.catalog import named
from ci_tools.catalog.model import Catalog, Platform
from ci_tools.commands import _common
from ci_tools.host import answer, facts, hostinfo
from ci_tools.host.detect import detect
from ci_tools.host.facts import MACHINES, Host, HostGpu

# Each stated fact: its option, and the environment variable a script may set instead.
ENV = {
    "gpu_cc": "CI_TOOLS_GPU_CC",
    "cpu_flags": "CI_TOOLS_CPU_FLAGS",
    "driver": "CI_TOOLS_DRIVER",
    "machine": "CI_TOOLS_MACHINE",
}


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
    parser.add_argument("--python", metavar="X.Y", help="the Python (default: the branch's newest)")
    parser.add_argument(
        "--org",
        type=_common.org_name,
        help="the Flox organisation in the install line (default: the catalog's `org`)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    _fact_options(parser)


def _fact_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpu-cc",
        action="append",
        metavar="X.Y|none",
        help="the GPUs' compute capabilities instead of asking nvidia-smi; repeat or "
        f"comma-separate for several GPUs; `none` for no GPU (or ${ENV['gpu_cc']})",
    )
    parser.add_argument(
        "--cpu-flags",
        metavar="LIST",
        help="the CPU flags (/proc/cpuinfo `flags` or `Features`), comma or space separated, "
        f"instead of reading /proc/cpuinfo (or ${ENV['cpu_flags']})",
    )
    parser.add_argument(
        "--driver",
        metavar="VERSION",
        help="the NVIDIA driver version (580.65.06) instead of asking nvidia-smi "
        f"(or ${ENV['driver']})",
    )
    parser.add_argument(
        "--machine",
        metavar="M",
        help=f"the machine instead of uname: {', '.join([*MACHINES, *facts.MACHINE_ALIASES])} "
        f"(or ${ENV['machine']})",
    )


def run(args: argparse.Namespace) -> int:
    catalog = _common.load(args)
    branch = args.branch or _common.default_branch(catalog, Path.cwd())
    stated = Stated.of(args, os.environ)
    host = _host(stated)
    org, org_warning = _org_of(args.org, catalog)
    detection = detect(
        catalog,
        host,
        branch=branch,
        package=args.package,
        workload=args.workload,
        python=args.python,
    )
    data = answer.to_json(detection, org, answer.Known.of(catalog))
    if org_warning:
        data["warnings"].append(org_warning)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(answer.render_text(data), end="")
        in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
        for warning in data["warnings"]:
            # Host text (nvidia-smi names) is quoted in warnings: never a workflow command.
            for line in log_lines("ci-tools: warning: ", warning, in_actions=in_actions):
                print(line, file=sys.stderr)
        if not detection.ok:
            print(
                f"ci-tools: error: no {detection.package} variant on any branch fits this machine",
                file=sys.stderr,
            )
    return detection.exit_code


def _org_of(given: str | None, catalog: Catalog) -> tuple[str, str | None]:
    if given is not None:
        return given, None
    if catalog.org is not None:
        return catalog.org, None
    return answer.ORG_PLACEHOLDER, (
        f"{catalog.display_name} names no `org`: the install lines say "
        f"{answer.ORG_PLACEHOLDER}; set `org:` in {named.settings_file(catalog)} or pass --org"
    )


@dataclass(frozen=True, kw_only=True)
class Stated:
    """The facts a person or a script stated, parsed; None: read it from the host."""

    machine: str | None = None
    capabilities: tuple[str, ...] | None = None
    flags: frozenset[str] | None = None
    driver: str | None = None
    # Where the GPU, CPU and driver facts came from (options or variables), for messages.
    sources: tuple[str, ...] = ()

    @classmethod
    def of(cls, args: argparse.Namespace, env: Mapping[str, str]) -> Stated:
        def given(key: str, option: str, value: str | None) -> tuple[str, str] | None:
            if value is not None:
                return value, option
            from_env = env.get(ENV[key])
            return (from_env, ENV[key]) if from_env is not None else None

        gpu_cc = ",".join(args.gpu_cc) if args.gpu_cc is not None else None
        machine = given("machine", "--machine", args.machine)
        gpus = given("gpu_cc", "--gpu-cc", gpu_cc)
        flags = given("cpu_flags", "--cpu-flags", args.cpu_flags)
        driver = given("driver", "--driver", args.driver)
        return cls(
            machine=facts.parse_machine(*machine) if machine else None,
            capabilities=facts.parse_capabilities(*gpus) if gpus else None,
            flags=facts.parse_flags(*flags) if flags else None,
            driver=facts.parse_driver(*driver) if driver else None,
            sources=tuple(found[1] for found in (gpus, flags, driver) if found),
        )


def _host(stated: Stated) -> Host:
    machine = stated.machine if stated.machine is not None else hostinfo.read_machine()
    if MACHINES.get(machine) is Platform.AARCH64_DARWIN:
        if stated.sources:
            verb = "do" if len(stated.sources) > 1 else "does"
            raise InputError(
                f"{' and '.join(stated.sources)} {verb} not apply to an arm64-darwin machine, "
                "whose build uses Metal (MPS); to advise a Linux machine pass --machine x86_64 "
                "or aarch64"
            )
        return Host(machine=machine)
    warnings = []
    driver = stated.driver
    if stated.capabilities is not None:
        gpus = tuple(HostGpu(name=None, capability=c) for c in stated.capabilities)
        note = facts.STATED_NO_GPU
    else:
        reading = hostinfo.read_gpus()
        gpus, note = reading.gpus, reading.note
        driver = driver or reading.driver
        if reading.warning:
            warnings.append(reading.warning)
    if stated.flags is not None:
        flags = stated.flags
    else:
        cpu = hostinfo.read_cpu_flags()
        flags = cpu.flags
        if cpu.warning:
            warnings.append(cpu.warning)
    return Host(
        machine=machine,
        cpu_flags=flags,
        gpus=gpus,
        driver=driver if gpus else None,
        no_gpu_note=note,
        warnings=tuple(warnings),
    )
