"""ci_tools/catalog/upstream.py and nix/upstream.nix name the same sources, and the message
for a source override without a hash gives the command that prints it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tools.catalog.upstream import FAKE_HASH, UPSTREAM
from tests.conftest import REPO_ROOT, CliRunner


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="nix-instantiate not found")
def test_the_python_table_is_the_nix_one(tmp_path: Path) -> None:
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", str(REPO_ROOT / "nix/upstream.nix")],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NIX_STATE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {
        u.attribute: {"owner": u.owner, "repo": u.repo, "fetchSubmodules": u.submodules}
        for u in UPSTREAM.values()
    }


@pytest.mark.parametrize(
    ("package", "command"),
    [
        ("pytorch", "nix-prefetch-github --fetch-submodules pytorch pytorch --rev v2.10.0"),
        ("torchvision", "nix-prefetch-github pytorch vision --rev v2.10.0"),
    ],
)
def test_a_source_without_hash_names_the_prefetch_command(
    run_cli: CliRunner, tmp_path: Path, package: str, command: str
) -> None:
    text = (REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
    old = '      pytorch: {version: "2.10.0", hash: "sha256-RKiZLHBCneMtZKRgTEuW1K7+Jpi+tx11BMXuS1jC1xQ="}'
    assert text.count(old) == 1
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(text.replace(old, f'      {package}: {{version: "2.10.0"}}'), "utf-8")
    done = run_cli("matrix", "--catalog", str(catalog), "--branch", "main")
    assert done.returncode == 2
    assert (
        f'cuda-13_0.sources.{package} is missing the required key "hash"; get it with `{command}`'
    ) in done.stderr
    assert f'or set hash: "{FAKE_HASH}", run `flox build` once' in done.stderr
