"""The Nix binary cache the jobs of a fleet share (runners.yaml `cache`).

Apart from `runners` so that an inventory without a cache (every `ci-tools matrix` without
one) does not create its record.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class BinaryCache:
    """The Nix binary cache the jobs share (runners.yaml `cache`)."""

    url: str
    public_keys: tuple[str, ...]
    signing_key_secret: str
