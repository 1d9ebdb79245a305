"""Where each package's upstream source lives on GitHub, as `nix/upstream.nix` fetches it.

A `sources` override needs the hash of that fetch; the message for a missing one gives the
command that prints it. `tests/nix/test_upstream.py` keeps this table equal to the Nix one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# A hash of the right form that no source has: `flox build` then fails the fetch, printing
# the real hash after "got:".
FAKE_HASH = "sha256-" + "A" * 43 + "="


@dataclass(frozen=True, kw_only=True)
class Upstream:
    attribute: str  # nixpkgs' name, the key of nix/upstream.nix
    owner: str
    repo: str
    submodules: bool  # fetchFromGitHub's fetchSubmodules: the hash covers them

    def prefetch(self, version: str) -> str:
        """The command that prints the SRI hash `sources.<package>.hash` takes."""
        submodules = " --fetch-submodules" if self.submodules else ""
        return f"nix-prefetch-github{submodules} {self.owner} {self.repo} --rev v{version}"


# Keyed by the catalog's package names.
UPSTREAM = {
    "pytorch": Upstream(attribute="torch", owner="pytorch", repo="pytorch", submodules=True),
    "torchvision": Upstream(
        attribute="torchvision", owner="pytorch", repo="vision", submodules=False
    ),
    "torchaudio": Upstream(attribute="torchaudio", owner="pytorch", repo="audio", submodules=False),
}

_VERSION = re.compile(r"[0-9]{1,6}(\.[0-9]{1,6}){0,3}", re.ASCII)


def missing_hash_hint(table: dict[Any, Any], what: str) -> str:
    """Said after "... is missing the required key "hash"" for `<branch>.sources.<package>`:
    how to get the hash of that package's source at that version."""
    package = what.rsplit(".", 1)[-1]
    written = table.get("version")
    version = written if isinstance(written, str) and _VERSION.fullmatch(written) else "<version>"
    fake = (
        f'or set hash: "{FAKE_HASH}", run `flox build` once and copy the hash it prints '
        'after "got:"'
    )
    upstream = UPSTREAM.get(package)
    if upstream is None:
        return f"; get it with nix-prefetch-github for the package's repository, {fake}"
    return f"; get it with `{upstream.prefetch(version)}` (its `hash`), {fake}"
