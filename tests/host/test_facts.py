"""facts: a machine as plain facts, and which of the catalog's platforms it is."""

from __future__ import annotations

import pytest

from ci_tools.catalog.model import Platform
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
    )
    assert Host.described(machine="aarch64") == Host(machine="aarch64")
