"""Fat binaries and ELF files built byte by byte, as NVIDIA's tools lay them out
(benchmarks/fatbin.py names the sources): what the size benchmark's tests read."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

MAGIC = 0xBA55ED50
PTX, ELF = 1, 2


def entry(kind: int, arch: int, payload: int, header_size: int = 64) -> bytes:
    """One entry: its header (kind, version, header size, payload size, arch at 28) and a
    payload of `payload` bytes."""
    head = struct.pack("<HHIQ", kind, 0x0101, header_size, payload)
    head += bytes(28 - len(head)) + struct.pack("<I", arch)
    return head + bytes(header_size - len(head)) + b"\xab" * payload


def container(entries: Sequence[bytes]) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def elf(sections: Mapping[str, bytes]) -> bytes:
    """A 64-bit little-endian ELF file holding `sections` (and its section name table)."""
    names = b"\0" + b"".join(name.encode() + b"\0" for name in (*sections, ".shstrtab"))
    blobs = [*sections.values(), names]
    offset, placed = 64, []
    for blob in blobs:
        placed.append((offset, len(blob)))
        offset += len(blob) + (-len(blob)) % 8
    shoff = offset
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(blobs) + 1, len(blobs)
    )
    body = b"".join(blob + bytes((-len(blob)) % 8) for blob in blobs)
    shdrs = bytes(64)  # section 0: SHT_NULL
    name_at = 1
    for (name, _), (at, size) in zip([*sections.items(), (".shstrtab", b"")], placed, strict=True):
        kind = 3 if name == ".shstrtab" else 1
        shdrs += struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, at, size, 0, 0, 8, 0)
        name_at += len(name) + 1
    return header + body + shdrs
