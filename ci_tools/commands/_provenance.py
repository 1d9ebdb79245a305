"""What `ci-tools release` attaches so anyone can check a published variant: the manifest
(store path, NAR hash, proof, where proven: ship/manifest.py), each published variant's SBOM
(written beside its record by the build leg: commands/_sbom.py), and, with `--subjects DIR`,
the `subject-checksums` files the attestation job signs (DIR/subjects-N.txt, their names in
the step output `subject-files` as a JSON list). `--subjects DIR` alone reads them back from
the release's manifest: what the attestation job, after the release, signs."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tools.base import bounded, ghoutput
from ci_tools.base.errors import InputError
from ci_tools.base.fsutil import atomic_write_text
from ci_tools.ship import manifest, sbom

if TYPE_CHECKING:
    from github.GitRelease import GitRelease

    from ci_tools.base import github_api
    from ci_tools.build.results import ResultRecord
    from ci_tools.build.smoke.expect import ExpectOf
    from ci_tools.ship.release import Notes

MAX_SBOM_BYTES = 16 << 20  # actions/attest's limit for an SBOM (action.yml, sbom-path)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--subjects",
        type=Path,
        metavar="DIR",
        help="write the attestation's subject-checksums files (<sha256 of the NAR>  <variant>, "
        f"at most {manifest.MAX_SUBJECTS} a file) to DIR/subjects-N.txt; without --results, "
        "of what the commit's release published (its manifest asset)",
    )


@dataclass(frozen=True, kw_only=True)
class Provenance:
    manifest_name: str
    manifest: dict[str, Any]
    sboms: tuple[tuple[str, bytes], ...]  # (asset name, content)


def of(
    notes: Notes,
    records: Sequence[ResultRecord],
    results_dir: Path,
    *,
    dry_run: bool,
    say: Callable[[str], None],
    expect_of: ExpectOf,
) -> Provenance:
    rows = notes.publishable if dry_run else notes.published
    made = manifest.build(
        tag=notes.tag,
        commit=notes.commit,
        branch=notes.branch,
        repository=os.environ.get("GITHUB_REPOSITORY", ""),
        records=records,
        published=[r.variant for r in rows],
        expect_of=expect_of,
    )
    for name in made["unbound"]:
        say(f"warning: {name}: published without a NAR hash in its record: not attested")
    sboms = []
    for entry in made["variants"]:
        found = _sbom_of(results_dir, entry["variant"], entry["nar_hash"], say)
        if found is not None:
            sboms.append((sbom.file_name(entry["variant"]), found))
    return Provenance(
        manifest_name=manifest.manifest_name(notes.tag), manifest=made, sboms=tuple(sboms)
    )


def _sbom_of(
    results_dir: Path, variant: str, nar_hash: str, say: Callable[[str], None]
) -> bytes | None:
    """The variant's SBOM from this run's records folder, when it is of the published bytes."""
    for path in sorted(results_dir.rglob(sbom.file_name(variant))):
        try:
            data = bounded.read_text(path, MAX_SBOM_BYTES)
            stated = sbom.top_nar_hash(json.loads(data))
        except (OSError, ValueError, InputError) as exc:
            say(f"warning: {path}: not attached: {exc}")
            continue
        if stated == nar_hash:
            return data.encode("utf-8")
        say(f"warning: {path}: of other bytes ({stated}) than the published {nar_hash}")
    return None


def subjects_of_release(api: github_api.Api, tag: str, folder: Path) -> int:
    """`--subjects DIR` without `--results`: the subjects of what release `tag` published, read
    from its manifest asset (the attestation job's input). No release or no manifest: no
    files, an empty list, exit 0 (nothing was published, or nothing bound)."""
    existing = api.find_release(tag)
    name = manifest.manifest_name(tag)
    raw = api.asset_bytes(existing, name, manifest.MAX_BYTES) if existing else None
    data: dict[str, Any] = {"variants": []}
    if raw is not None:
        source = f"release {tag} asset {manifest.manifest_name(tag)}"
        try:
            loaded = json.loads(raw)
        except ValueError as exc:
            raise InputError(f"{source}: not JSON: {exc}") from None
        data = {"variants": [asdict(e) for e in manifest.entries(loaded, source)]}
    written = _write_files(folder, data)
    print(f"{len(data['variants'])} subjects of release {tag} in {len(written)} files")
    return 0


def write_subjects(folder: Path | None, made: Provenance) -> None:
    if folder is not None:
        _write_files(folder, made.manifest)


def _write_files(folder: Path, data: dict[str, Any]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for index, text in enumerate(manifest.subject_files(data)):
        path = folder / f"subjects-{index}.txt"
        atomic_write_text(path, text)
        names.append(path.name)
    env = dict(os.environ)
    if ghoutput.on_actions(env):
        ghoutput.append_outputs(ghoutput.output_path(env), {"subject-files": json.dumps(names)})
    return names


def say_would(made: Provenance, say: Callable[[str], None]) -> None:
    if not made.manifest["variants"]:
        return
    say(f"would attach {made.manifest_name} ({len(made.manifest['variants'])} variants)")
    for name, _data in made.sboms:
        say(f"would attach {name}")


def attach(
    api: github_api.Api, release: GitRelease, made: Provenance, say: Callable[[str], None]
) -> None:
    if not made.manifest["variants"]:
        # Records of an older ci-tools: nothing to bind, verify or attest (warned in `of`).
        return
    data = (json.dumps(made.manifest, indent=2) + "\n").encode()
    api.replace_asset(release, name=made.manifest_name, data=data)
    say(f"attached {made.manifest_name}")
    for name, content in made.sboms:
        api.replace_asset(release, name=name, data=content, content_type="application/json")
        say(f"attached {name}")
