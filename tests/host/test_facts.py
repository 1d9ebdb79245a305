"""facts: a machine as plain facts, and which of the catalog's platforms it is."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from ci_tools.base.errors import InputError
from ci_tools.catalog.model import Platform
from ci_tools.host import facts
from ci_tools.host.facts import MACHINES, Host, HostGpu


@pytest.mark.parametrize(
    ("machine", "platform"),
    [
        ("x86_64", Platform.X86_64_LINUX),
        ("aarch64", Platform.AARCH64_LINUX),
        ("arm64-darwin", Platform.AARCH64_DARWIN),
        ("x86_64-darwin", None),
        ("ppc64le", None),
    ],
)
def test_platform(machine: str, platform: Platform | None) -> None:
    assert Host(machine=machine).platform is platform


def test_every_machine_name_is_a_platform_the_catalog_knows() -> None:
    assert set(MACHINES.values()) == set(Platform)


def test_described_takes_plain_facts() -> None:
    host = Host.described(
        machine="x86_64", capabilities=["9.0", "8.6", "9.0"], cpu_flags=("avx", "avx2", "avx")
    )
    assert host == Host(
        machine="x86_64",
        cpu_flags=frozenset({"avx", "avx2"}),
        gpus=(
            HostGpu(name=None, capability="9.0"),
            HostGpu(name=None, capability="8.6"),
            HostGpu(name=None, capability="9.0"),
        ),
        no_gpu_note="no NVIDIA GPU (as stated)",
    )
    assert Host.described(machine="aarch64") == Host(
        machine="aarch64", no_gpu_note="no NVIDIA GPU (as stated)"
    )


@pytest.mark.parametrize(
    ("text", "machine"),
    [
        ("x86_64", "x86_64"),
        ("arm64", "arm64-darwin"),
        ("aarch64-darwin", "arm64-darwin"),
        ("amd64", "x86_64"),
        ("aarch64-linux", "aarch64"),
        (" aarch64 ", "aarch64"),
    ],
)
def test_parse_machine_takes_what_uname_and_nix_say(text: str, machine: str) -> None:
    assert facts.parse_machine(text, "--machine") == machine


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (facts.parse_machine, "riscv64", 'X: unknown machine "riscv64"'),
        (facts.parse_capabilities, "9", 'X: "9" is not a compute capability'),
        (facts.parse_capabilities, "9.0,none", 'X: "none" is not a compute capability'),
        (
            facts.parse_capabilities,
            "\uff19.\uff10",
            'X: "\uff19.\uff10" is not a compute capability',
        ),
        (facts.parse_flags, "", "X: no flags given"),
        (facts.parse_flags, "avx <b>", 'X: "<b>" is not a cpuinfo flag'),
        (facts.parse_driver, "580.1.2.3", 'X: "580.1.2.3" is not an NVIDIA driver version'),
        (facts.parse_driver, "5", 'X: "5" is not an NVIDIA driver version'),
    ],
)
def test_stated_facts_refuse_what_they_cannot_read(
    parse: Callable[[str, str], object], text: str, message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        parse(text, "X")


def test_stated_facts_read() -> None:
    assert facts.parse_capabilities("9.0, 8.6", "X") == ("9.0", "8.6")
    assert facts.parse_capabilities("none", "X") == ()
    assert facts.parse_flags("avx avx2,fma", "X") == {"avx", "avx2", "fma"}
    assert facts.parse_driver(" 580.65.06", "X") == "580.65.06"
    assert Host(machine="x86_64", driver="580.65.06").driver_major == 580
    assert Host(machine="x86_64").driver_major is None
