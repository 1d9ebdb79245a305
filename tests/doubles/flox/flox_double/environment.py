"""Opening a path environment: the `.flox` folder, its `env.json` pointer and its manifest."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from flox_double.errors import FloxError

_CORRUPT_HINT = (
    "This is likely due to a corrupt environment.\n\n"
    "Try deleting the '.flox' directory and reinitializing the environment.\n"
    "If you cloned this environment from a remote repository, verify that\n"
)


@dataclass(frozen=True, kw_only=True)
class Environment:
    parent: Path  # the folder holding `.flox`; `result-<package>` links are made here

    @property
    def dot_flox(self) -> Path:
        return self.parent / ".flox"

    @property
    def pkgs(self) -> Path:
        return self.dot_flox / "pkgs"

    @property
    def lockfile(self) -> Path:
        # path_environment.rs `lockfile_path`: <.flox>/env/manifest.lock
        return self.dot_flox / "env" / "manifest.lock"


def open_environment(directory: Path) -> Environment:
    dot_flox = directory / ".flox"
    if not dot_flox.is_dir():
        # cli/flox/src/commands/mod.rs:1300 (`flox <cmd> -d DIR` / the current directory)
        raise FloxError(
            f"Did not find an environment in '{directory}'\n\n"
            f"Create an environment with 'flox init --dir {directory}'"
        )
    pointer = dot_flox / "env.json"
    if not pointer.is_file():
        # cli/flox/src/utils/errors.rs:49 EnvironmentError::EnvPointerNotFound
        raise FloxError(
            "Found a '.flox' directory but unable to locate an 'env.json' in it.\n\n"
            + _CORRUPT_HINT
            + "`.flox/env.json` is committed to the version control system."
        )
    _check_pointer(pointer)
    if not (dot_flox / "env").is_dir():
        # errors.rs:39 EnvironmentError::EnvDirNotFound
        raise FloxError(
            "Found a '.flox' directory but unable to locate an environment directory.\n\n"
            + _CORRUPT_HINT
            + "`.flox/env/manifest.toml` is committed to the version control system."
        )
    if not (dot_flox / "env" / "manifest.toml").is_file():
        # errors.rs:60 EnvironmentError::ManifestNotFound
        raise FloxError(
            "Found a '.flox' directory but unable to locate a manifest file.\n\n"
            + _CORRUPT_HINT
            + "`.flox/env/manifest.toml` is committed to the version control system."
        )
    return Environment(parent=directory)


def _check_pointer(pointer: Path) -> None:
    # models/environment/mod.rs:452 PathPointer { name, version: Version<1> }: serde refuses
    # anything else (a managed pointer also has `owner`; the double models path environments).
    try:
        data = json.loads(pointer.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FloxError(f"Failed to parse environment pointer '{pointer}': {exc}") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("name"), str)
        or not data["name"]
        or data.get("version") != 1
    ):
        raise FloxError(
            f"Failed to parse environment pointer '{pointer}': "
            'expected {"name": "<name>", "version": 1}'
        )
