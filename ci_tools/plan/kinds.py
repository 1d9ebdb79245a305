"""The two kinds of input fingerprint, and how a fingerprint names its kind.

A fingerprint is computed from Nix's parse of every Nix file (`nix-instantiate --parse`:
comments and layout do not count) or, where Nix is not installed, from the raw bytes (every
byte counts). The same inputs give different fingerprints of the two kinds, so a comparison
across kinds would call every stack changed, or, worse, silently never find a green record.
The kind is therefore part of the fingerprint's text, `<kind>-<32 hex digits>`
(`nix-0123...`), which the matrix prints, `mark-green` records and `--until-green` reads:
fingerprints of different kinds are never compared, and where one is met it is said.

Pure and light: the plain matrix path imports it without the fingerprinting machinery.
"""

from __future__ import annotations

import re
from enum import StrEnum


class FingerprintKind(StrEnum):
    NIX = "nix"  # Nix's parse: two files equal to Nix are equal
    RAW = "raw"  # raw bytes: any byte change counts

    @property
    def description(self) -> str:
        if self is FingerprintKind.NIX:
            return "Nix's parse (nix-instantiate --parse)"
        return "raw bytes (no Nix)"


# Hex digits of the digest: 128 bits, and short enough for a status description.
DIGEST_LENGTH = 32
# Patterns, not compiled ones: `re` compiles them on first use (and caches them), so a plain
# matrix, which reads no fingerprint, compiles neither at every start.
_FINGERPRINT = rf"({'|'.join(k.value for k in FingerprintKind)})-([0-9a-f]{{32}})"
_LEGACY = r"[0-9a-f]{32}"


def compose(kind: FingerprintKind, digest: str) -> str:
    return f"{kind.value}-{digest[:DIGEST_LENGTH]}"


def kind_of(fingerprint: str) -> FingerprintKind | None:
    """The kind a fingerprint names; None when it is not a fingerprint of a known kind."""
    match = re.fullmatch(_FINGERPRINT, fingerprint)
    return FingerprintKind(match[1]) if match else None


def check(fingerprint: str) -> str | None:
    """Why `fingerprint` is not one the matrix prints; None when it is."""
    if re.fullmatch(_FINGERPRINT, fingerprint):
        return None
    if re.fullmatch(_LEGACY, fingerprint):
        return (
            f'"{fingerprint}" has no kind (an older ci-tools printed it): plan again, the '
            "matrix prints nix-<32 hex> or raw-<32 hex>"
        )
    return (
        f'"{fingerprint}" is not a fingerprint (nix-<32 hex digits> or raw-<32 hex digits>, '
        "as the matrix prints)"
    )
