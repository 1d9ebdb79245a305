"""The build leg's SBOM: CycloneDX of each passed build's runtime closure, written beside its
record as `<variant>.cdx.json`, from `nix path-info --recursive --json` on the runner that
holds the path (ship/sbom.py makes it). The release attaches the SBOM of every variant it
publishes; a build whose closure Nix cannot list gets none, with a warning."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ci_tools import __version__
from ci_tools.base import ghoutput, narinfo
from ci_tools.base.fsutil import atomic_write_text
from ci_tools.build.results import BuildOutcome, Status
from ci_tools.ship import sbom


def write(
    variant: str, outcome: BuildOutcome, records: Sequence[Path], env: Mapping[str, str]
) -> None:
    if outcome.status is not Status.PASSED or not outcome.outputs:
        return
    top = outcome.outputs[0]
    try:
        closure = narinfo.path_info([top.store_path], env, recursive=True)
        document = sbom.cyclonedx(variant, top.store_path, closure, tool_version=__version__)
    except (narinfo.NarInfoError, ValueError) as exc:
        ghoutput.warning(f"{variant}: no SBOM: {exc}", env)
        return
    if records:  # beside the record in --results; --result-json's copy is the record alone
        path = records[0].with_name(sbom.file_name(variant))
        atomic_write_text(path, json.dumps(document, indent=1) + "\n")
