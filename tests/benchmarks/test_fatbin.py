"""benchmarks/fatbin.py: stored bytes per SM, read from ELF files built here (by hand, and by
the real objcopy into a real shared library where binutils is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import fatbin
from tests.benchmarks.fatbins import ELF, PTX, container, elf, entry


def test_bytes_per_sm_over_containers_and_padding() -> None:
    first = container([entry(ELF, 80, 1000), entry(ELF, 90, 2000), entry(PTX, 90, 300)])
    # sm_100+ entries carry longer headers (112 bytes); containers are padded with zeros.
    second = container([entry(ELF, 100, 50, header_size=112)])
    data = elf({".text": b"\x90" * 100, ".nv_fatbin": first + bytes(8) + second})
    assert fatbin.stored_by_arch(data) == {80: 64 + 1000, 90: 64 + 2000 + 64 + 300, 100: 162}
    assert fatbin.elf_count_by_arch(data) == {80: 1, 90: 1, 100: 1}


def test_relocatable_fat_binaries_count_too() -> None:
    data = elf({"__nv_relfatbin": container([entry(ELF, 86, 10)]), ".data": b"\0" * 8})
    assert fatbin.stored_by_arch(data) == {86: 74}


def test_files_without_fat_binaries() -> None:
    assert fatbin.stored_by_arch(elf({".text": b"\x90" * 10})) == {}
    assert fatbin.stored_by_arch(b"#!/bin/sh\necho not an ELF file\n") == {}
    assert fatbin.stored_by_arch(b"") == {}
    # A 32-bit or big-endian ELF file is not what torch ships on Linux: nothing read.
    assert fatbin.stored_by_arch(b"\x7fELF\x01\x01" + bytes(100)) == {}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        # The entry claims more payload than its container holds.
        (container([entry(ELF, 90, 100)])[:-50], "ends past"),
        # An entry header shorter than the fields it must hold.
        (
            container([entry(ELF, 90, 10, header_size=64)]).replace(
                b"\x40\x00\x00\x00", b"\x08\x00\x00\x00", 1
            ),
            "ends past",
        ),
    ],
)
def test_a_broken_fat_binary_is_an_error_not_a_figure(section: bytes, message: str) -> None:
    with pytest.raises(fatbin.FatbinError, match=message):
        fatbin.stored_by_arch(elf({".nv_fatbin": section}))


def test_stored_bytes_of_a_file(tmp_path: Path) -> None:
    path = tmp_path / "libx.so"
    path.write_bytes(elf({".nv_fatbin": container([entry(ELF, 90, 7)])}))
    assert fatbin.stored_bytes(path) == {90: 71}
    (tmp_path / "empty.so").write_bytes(b"")
    assert fatbin.stored_bytes(tmp_path / "empty.so") == {}


def test_a_real_shared_library_with_a_fat_binary_section(tmp_path: Path) -> None:
    """gcc links a real .so; objcopy adds the section as NVIDIA's linker would name it."""
    if shutil.which("gcc") is None or shutil.which("objcopy") is None:
        pytest.skip("needs gcc and objcopy (Debian's gcc and binutils)")
    source = tmp_path / "x.c"
    source.write_text("int answer(void) { return 42; }\n")
    lib = tmp_path / "libx.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    blob = tmp_path / "fatbin"
    blob.write_bytes(container([entry(ELF, 90, 4096), entry(ELF, 75, 100)]))
    subprocess.run(["objcopy", "--add-section", f".nv_fatbin={blob}", str(lib)], check=True)
    sections = {s.name for s in fatbin.elf_sections(lib.read_bytes())}
    assert {".text", ".dynsym", ".nv_fatbin"} <= sections
    assert fatbin.stored_bytes(lib) == {90: 64 + 4096, 75: 164}
