"""Host facts: /proc/cpuinfo flags (x86 `flags`, aarch64 `Features`) and the platform name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ci_tools.host import hostcpu

X86 = """\
processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu vme sse sse2 avx avx2 fma f16c avx512f avx512dq
bugs\t\t: spectre_v1

processor\t: 1
flags\t\t: fpu vme sse sse2 avx avx2 fma f16c avx512f avx512dq avx512bw avx512vl
"""

AARCH64 = """\
processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp sve sve2
CPU implementer\t: 0x41
"""


def test_x86_flags_are_what_every_processor_has() -> None:
    flags = hostcpu.parse_cpuinfo(X86)
    assert {"avx2", "fma", "f16c", "avx512f", "avx512dq"} <= flags
    # Only processor 1 lists these: code using them could SIGILL on processor 0.
    assert not {"avx512bw", "avx512vl"} & flags
    assert "Intel(R)" not in flags and "spectre_v1" not in flags


def test_aarch64_features() -> None:
    flags = hostcpu.parse_cpuinfo(AARCH64)
    assert {"fphp", "asimdhp", "asimddp", "sve", "sve2"} <= flags
    assert "0x41" not in flags


def test_text_without_flags_gives_nothing() -> None:
    assert hostcpu.parse_cpuinfo("processor : 0\nmodel name : x\n") == frozenset()


def test_read_cpu_flags_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(AARCH64, encoding="utf-8")
    assert "sve2" in hostcpu.read_cpu_flags(path)
    assert hostcpu.read_cpu_flags(tmp_path / "missing") == frozenset()


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="this host has no /proc/cpuinfo")
def test_this_host_has_flags() -> None:
    assert hostcpu.read_cpu_flags()


@pytest.mark.parametrize(
    ("machine", "system", "expected"),
    [
        ("x86_64", "linux", "x86_64-linux"),
        ("AMD64", "linux", "x86_64-linux"),
        ("aarch64", "linux", "aarch64-linux"),
        ("arm64", "darwin", "aarch64-darwin"),
        ("ppc64le", "linux", None),
        ("x86_64", "win32", None),
    ],
)
def test_platform_name(machine: str, system: str, expected: str | None) -> None:
    assert hostcpu.platform_name(machine, system) == expected


def test_host_platform_on_linux() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the catalog's Linux platforms only")
    assert hostcpu.host_platform() in {"x86_64-linux", "aarch64-linux"}
