"""`ci-tools page` as a maintainer runs it: one HTML file, from the catalog and the records."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ci_tools.catalog.model import Catalog
from ci_tools.host.candidates import every_variant
from tests.conftest import DATA, REPO_ROOT

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


def page_data(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/json" id="ci-tools-data">(.*?)</script>', text, re.S
    )
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_one_branch_with_its_records(run_cli: CliRunner, tmp_path: Path, catalog: Catalog) -> None:
    out = tmp_path / "site"
    result = run_cli(
        "page", "--out", str(out), "--branch", "cuda-12_9", "--results", str(DATA / "results-cuda-12_9"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    page = out / "index.html"
    assert f"page: {page}" in result.stdout
    assert page.stat().st_mode & 0o777 == 0o644
    data = page_data(page)
    assert [b["name"] for b in data["branches"]] == ["cuda-12_9"]
    assert data["org"] == "barstoolbluz"
    record = data["records"]["cuda-12_9/pytorch-python313-cuda12_9-sm90-avx512"]
    assert record["sizes"]["closure"] == 6012345678
    # The no-script table: every variant of the branch, with its install line.
    text = page.read_text(encoding="utf-8")
    names = [v.name for v in every_variant(catalog) if v.branch.name == "cuda-12_9"]
    for name in names:
        assert f"<code>flox install barstoolbluz/{name}</code>" in text
    assert f"Every variant ({len(names)})" in text
    # Within one branch, a GPU it lacks has no alternative to point to.
    assert "cuda-13_0" not in json.dumps(data["variants"])


def test_every_branch_by_default(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("page", "--out", str(tmp_path), "--org", "acme")
    assert result.returncode == 0, result.stderr
    data = page_data(tmp_path / "index.html")
    assert [b["name"] for b in data["branches"]] == ["main", "cuda-12_9", "cuda-13_0"]
    assert all(v["install"].startswith("flox install acme/") for v in data["variants"].values())


def test_bad_input_exit_2_and_writes_nothing(run_cli: CliRunner, tmp_path: Path) -> None:
    cases = [
        (("--branch", "nope"), 'unknown branch "nope"'),
        (("--results", str(tmp_path / "missing")), "no such results folder"),
        (("--org", "a b"), "'a b'"),
    ]
    for args, message in cases:
        out = tmp_path / "out"
        result = run_cli("page", "--out", str(out), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr
        assert "Traceback" not in result.stderr
        assert not (out / "index.html").exists()
    a_file = tmp_path / "file"
    a_file.write_text("")
    result = run_cli("page", "--out", str(a_file))
    assert result.returncode == 2 and "not a folder" in result.stderr


def test_a_catalog_without_org_needs_one(run_cli: CliRunner, tmp_path: Path) -> None:
    text = (REPO_ROOT / "catalog.yaml").read_text().replace("\norg: barstoolbluz\n", "\n", 1)
    (tmp_path / "catalog.yaml").write_text(text)
    (tmp_path / "nix").symlink_to(REPO_ROOT / "nix")
    result = run_cli("page", "--out", str(tmp_path / "site"), cwd=tmp_path)
    assert result.returncode == 2
    assert "names no `org`" in result.stderr
    result = run_cli("page", "--out", str(tmp_path / "site"), "--org", "acme", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
