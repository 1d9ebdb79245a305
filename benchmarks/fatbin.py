"""How many bytes of GPU code an ELF library stores for each SM, read from its fat binaries.

A CUDA library keeps its device code in the `.nv_fatbin` section (`__nv_relfatbin` for
relocatable code): fat binary containers laid end to end, each a 16-byte header and entries,
one per (kind, architecture), each an entry header and its payload as stored (often
compressed). The layout read here, little-endian:

    container: u32 magic (0xBA55ED50; 0x466243B1 relocatable), u16 version, u16 header size,
               u64 size of the entries that follow
    entry:     u16 kind (1 PTX, 2 ELF/cubin), u16 version, u32 header size,
               u64 payload size, ..., u32 architecture at offset 28 (90 for sm_90 and sm_90a)

as NVIDIA's fatbinary.h declares the container (`fatBinaryHeader`) and as cuobjdump reads the
entries (github.com/GrigoryEvko/nvopen-tools fatbin/FORMAT_SPECIFICATION.md, checked against
CUDA 11-13 binaries; the entry layout agrees with n-eiling/cuda-fatbin-decompression). Pure
functions over bytes; `stored_bytes` maps a file.
"""

from __future__ import annotations

import mmap
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
MAGICS = (struct.pack("<I", 0xBA55ED50), struct.pack("<I", 0x466243B1))
KIND_PTX = 1
KIND_ELF = 2
_ELF_MAGIC = b"\x7fELF"
_SHT_NOBITS = 8
_ENTRY_MIN = 32  # an entry header is at least this long: the fields read end at byte 32


class FatbinError(ValueError):
    """A section that claims to be a fat binary and is not one: where and why."""


@dataclass(frozen=True)
class Entry:
    kind: int
    arch: int  # 90 for sm_90 (and sm_90a)
    stored: int  # header + payload as stored in the file


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size: int


def elf_sections(data: bytes | mmap.mmap) -> list[Section]:
    """The sections of a 64-bit little-endian ELF file (x86_64 and aarch64 Linux); [] for
    anything else, which holds no fat binary this reads."""
    if len(data) < 64 or data[:4] != _ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return []
    shoff = _u64(data, 0x28)
    entsize, count, strndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or entsize < 64 or shoff + entsize > len(data):
        return []
    if count == 0:  # more sections than e_shnum holds: the count is in section 0's sh_size
        count = _u64(data, shoff + 32)
    if shoff + count * entsize > len(data):
        raise FatbinError(f"section headers end past the file ({count} of {entsize} bytes)")
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    if strndx >= count:
        return []
    names_at, names_size = headers[strndx][4], headers[strndx][5]
    out = []
    for name_offset, kind, _flags, _addr, offset, size in headers:
        if kind == _SHT_NOBITS or name_offset >= names_size:
            continue
        start = names_at + name_offset
        end = data.find(b"\0", start, names_at + names_size)
        name = bytes(data[start : end if end >= 0 else start]).decode("ascii", "replace")
        if offset + size > len(data):
            raise FatbinError(f"section {name} ends past the file")
        out.append(Section(name=name, offset=offset, size=size))
    return out


def entries(data: bytes | mmap.mmap, start: int, end: int) -> Iterator[Entry]:
    """Every entry of the containers between `start` and `end` (one section)."""
    pos = start
    while pos + 16 <= end:
        if bytes(data[pos : pos + 4]) not in MAGICS:
            pos = _next_container(data, pos, end)
            if pos < 0:
                return  # padding after the last container
        header_size = struct.unpack_from("<H", data, pos + 6)[0]
        body = _u64(data, pos + 8)
        stop = pos + header_size + body
        if header_size < 16 or stop > end:
            raise FatbinError(f"container at {pos:#x} ends past its section ({stop:#x} > {end:#x})")
        yield from _container(data, pos + header_size, stop)
        pos = stop


def _next_container(data: bytes | mmap.mmap, pos: int, end: int) -> int:
    """Where the next container starts after padding; -1 where none does. Containers are
    padded with zeros: skip those first, and search only past anything else."""
    while pos < end and data[pos] == 0:
        pos += 1
    if pos + 4 <= end and bytes(data[pos : pos + 4]) in MAGICS:
        return pos
    found = [p for p in (data.find(m, pos, end) for m in MAGICS) if p >= 0]
    return min(found) if found else -1


def _container(data: bytes | mmap.mmap, pos: int, stop: int) -> Iterator[Entry]:
    while pos + _ENTRY_MIN <= stop:
        kind, _version, header_size = struct.unpack_from("<HHI", data, pos)
        payload = _u64(data, pos + 8)
        arch = struct.unpack_from("<I", data, pos + 28)[0]
        size = header_size + payload
        if header_size < _ENTRY_MIN or pos + size > stop:
            raise FatbinError(f"entry at {pos:#x} ends past its container ({pos + size:#x})")
        yield Entry(kind=kind, arch=arch, stored=size)
        pos += size


def stored_by_arch(data: bytes | mmap.mmap) -> Counter[int]:
    """Bytes stored per architecture in every fat binary section of one ELF file."""
    by_arch: Counter[int] = Counter()
    for section in elf_sections(data):
        if section.name in FATBIN_SECTIONS:
            for entry in entries(data, section.offset, section.offset + section.size):
                by_arch[entry.arch] += entry.stored
    return by_arch


def elf_count_by_arch(data: bytes | mmap.mmap) -> Counter[int]:
    """How many cubins (ELF entries) each architecture has: what `cuobjdump --list-elf` lists."""
    counts: Counter[int] = Counter()
    for section in elf_sections(data):
        if section.name in FATBIN_SECTIONS:
            for entry in entries(data, section.offset, section.offset + section.size):
                if entry.kind == KIND_ELF:
                    counts[entry.arch] += 1
    return counts


def stored_bytes(path: Path) -> Counter[int]:
    """stored_by_arch of a file on disk, mapped rather than read (libtorch_cuda.so is large)."""
    with path.open("rb") as handle:
        try:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped, and holds no code
            return Counter()
        with mapped:
            return stored_by_arch(mapped)


def _u64(data: bytes | mmap.mmap, at: int) -> int:
    value: int = struct.unpack_from("<Q", data, at)[0]
    return value
