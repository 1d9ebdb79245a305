"""A fake FloxHub: which organisation holds which package, built from which commit.

State lives in FLOX_DOUBLE_STATE/floxhub.json, written by `flox publish` and read by
`flox show` (the flox command that says what the catalog holds for one pkg-path:
cli/flox/src/commands/show.rs)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from flox_double.errors import FloxError


@dataclass(frozen=True, kw_only=True)
class Build:
    version: str
    system: str
    rev: str
    published_at: str


def _path(environ: Mapping[str, str]) -> Path:
    state = environ.get("FLOX_DOUBLE_STATE")
    if not state:
        raise FloxError("flox double: set FLOX_DOUBLE_STATE to the fake FloxHub's folder")
    return Path(state) / "floxhub.json"


def load(environ: Mapping[str, str]) -> dict[str, dict[str, list[Build]]]:
    path = _path(environ)
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        org: {name: [Build(**b) for b in builds] for name, builds in packages.items()}
        for org, packages in data.items()
    }


def record(environ: Mapping[str, str], org: str, name: str, build: Build) -> None:
    hub = load(environ)
    hub.setdefault(org, {}).setdefault(name, []).append(build)
    path = _path(environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    data = {o: {n: [asdict(b) for b in bs] for n, bs in p.items()} for o, p in hub.items()}
    temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    temporary.replace(path)


def builds(environ: Mapping[str, str], org: str, name: str) -> list[Build]:
    return load(environ).get(org, {}).get(name, [])


def render_show(pkg_path: str, found: list[Build]) -> str:
    """commands/show.rs `render_show_catalog`: newest first, as the catalog answers."""
    latest = found[-1]
    org = pkg_path.split("/", 1)[0]
    lines = [
        f"{pkg_path} - <no description provided>",
        f"Catalog: {org}",
        f"Latest:  {pkg_path}@{latest.version}",
        "Systems: " + ", ".join(sorted({b.system for b in found if b.version == latest.version})),
        "",
        "Other versions:",
    ]
    seen: list[str] = []
    for build in reversed(found):
        if build.version in seen:
            continue
        seen.append(build.version)
        systems = sorted({b.system for b in found if b.version == build.version})
        lines.append(f"    {pkg_path}@{build.version} ({', '.join(systems)} only)")
    return "\n".join(lines) + "\n"
