"""`ci-tools verify`'s judgement (pure): does the installed path hold the bytes the release
published, how was that variant proven, and which command checks the signature over the same
digest.

The attestation's subject digest is the sha256 of the path's NAR serialisation (what
`nix-store --dump PATH` writes), so `gh attestation verify` checks it on that file: gh
hashes the file it is given and looks for an attestation of that digest in the repository
(cli.github.com/manual/gh_attestation_verify: `--repo`, `--signer-workflow`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ci_tools.ship.manifest import Entry

RELEASE_WORKFLOW = ".github/workflows/release.yml"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    matches: bool
    lines: tuple[str, ...]


def attestation_command(entry: Entry, repository: str) -> str:
    nar = f"{entry.variant}.nar"
    dump = shlex.join(["nix-store", "--dump", entry.store_path])
    verify = ["gh", "attestation", "verify", nar]
    if repository:
        verify += ["--repo", repository, "--signer-workflow", f"{repository}/{RELEASE_WORKFLOW}"]
    return f"{dump} > {shlex.quote(nar)} && {shlex.join(verify)}"


def judge(entry: Entry, on_disk: str, *, tag: str, repository: str) -> Verdict:
    """`on_disk`: the NAR hash of the installed path, recomputed from its files (SRI)."""
    proven = f"proven: {entry.proof}"
    if entry.proven_on:
        proven += f" (checks ran on {entry.proven_on}, route {entry.route or 'unknown'})"
    if on_disk != entry.nar_hash:
        return Verdict(
            matches=False,
            lines=(
                f"MISMATCH: {entry.store_path} here has NAR hash {on_disk}; release {tag} "
                f"published {entry.variant} with {entry.nar_hash}: these are not the bytes "
                "that were proven and published (changed on disk, or another build)",
            ),
        )
    return Verdict(
        matches=True,
        lines=(
            f"OK: {entry.store_path} has NAR hash {entry.nar_hash} (sha256 {entry.sha256}), "
            f"the bytes release {tag} published as {entry.variant} to {entry.org or 'its org'}",
            proven,
            "check the signature over the same digest:",
            f"  {attestation_command(entry, repository)}",
        ),
    )
