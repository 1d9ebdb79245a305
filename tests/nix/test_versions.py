"""A catalog version the pin does not ship stops evaluation, through real `nix-instantiate`.

The builders compare the version the pinned nixpkgs (after the catalog's source overrides)
evaluates to with the catalog's, so a real `flox build` fails in seconds naming both and the
fix, instead of building the pin's version under the catalog's name for hours.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci_tools.catalog.load import load_catalog
from tests.conftest import REPO_ROOT
from tests.nix.test_nix import _repository, nix_env, nix_eval, nix_json

__all__ = ["nix_env"]  # the module's fixture, shared

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None,
    reason="nix-instantiate not found: install Debian's nix-bin to run the Nix tests",
)

MAIN_VERSIONS = 'versions: {pytorch: "2.8.0", torchvision: "0.23.0"}'
CPU = "python313-cpu-avx2"
# What nix-prefetch-github printed for v2.10.0 (the shipped cuda-13_0 override); the double's
# fetch checks its form, not the content.
HASH = "sha256-RKiZLHBCneMtZKRgTEuW1K7+Jpi+tx11BMXuS1jC1xQ="


def _main(tmp_path: Path, versions: str, extra: str = "") -> Path:
    """A build repository for branch main whose catalog says `versions` (and `extra`)."""
    text = (REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    assert text.count(MAIN_VERSIONS) == 1
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(text.replace(MAIN_VERSIONS, versions + extra), encoding="utf-8")
    return _repository(tmp_path / "repo", load_catalog(catalog), "main")


def _evaluate(name: str) -> str:
    return f"""(import ./.flox/pkgs/{name}.nix {{
        fetchPinnedNixpkgs = import ./double/fetch.nix; }}).drvPath"""


def _error(env: dict[str, str], root: Path, name: str) -> str:
    done = nix_eval(env, _evaluate(name), cwd=root)
    assert done.returncode != 0, f"{name} evaluated: {done.stdout[:300]}"
    return " ".join(done.stderr.split())


def test_a_torch_the_pin_does_not_ship_fails_naming_both_and_the_fix(
    nix_env: dict[str, str], tmp_path: Path
) -> None:
    root = _main(tmp_path, 'versions: {pytorch: "2.13.0", torchvision: "0.23.0"}')
    for name in (f"pytorch-{CPU}", "pytorch-python313-cuda12_8-sm90-avx512", f"torchvision-{CPU}"):
        message = _error(nix_env, root, name)
        assert (
            f"pytorch-{name.split('-', 1)[1]}: catalog.yaml says pytorch 2.13.0, but the pinned "
            "nixpkgs' python313Packages.torch is 2.8.0. Add `sources.pytorch` with version "
            "2.13.0 and its hash to the branch"
        ) in message, message


def test_a_torchvision_the_pin_does_not_ship_fails_too(
    nix_env: dict[str, str], tmp_path: Path
) -> None:
    root = _main(tmp_path, 'versions: {pytorch: "2.8.0", torchvision: "0.26.0"}')
    message = _error(nix_env, root, f"torchvision-{CPU}")
    assert (
        "catalog.yaml says torchvision 0.26.0, but the pinned nixpkgs' "
        "python313Packages.torchvision is 0.23.0. Add `sources.torchvision`"
    ) in message, message
    # Its PyTorch is the pin's and evaluates.
    assert nix_eval(nix_env, _evaluate(f"pytorch-{CPU}"), cwd=root).returncode == 0


def test_the_source_override_the_message_asks_for_evaluates(
    nix_env: dict[str, str], tmp_path: Path
) -> None:
    sources = f'\n    sources:\n      pytorch: {{version: "2.13.0", hash: "{HASH}"}}'
    root = _main(tmp_path, 'versions: {pytorch: "2.13.0", torchvision: "0.23.0"}', sources)
    versions = nix_json(
        nix_env,
        f"""let d = import ./.flox/pkgs/torchvision-{CPU}.nix {{
              fetchPinnedNixpkgs = import ./double/fetch.nix; }};
            in [ d.passthru.torch.version d.version ]""",
        cwd=root,
    )
    assert versions == ["2.13.0", "0.23.0"]
