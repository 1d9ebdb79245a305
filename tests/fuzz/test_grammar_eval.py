"""The grammar refuses what cannot evaluate, and only that (issue 20 item 11).

For each rule the catalog gained, three facts:
  G1 the loader refuses the value in catalog.yaml: exit 2, the file:line, what would be right
  G2 a recipe rendered with the value anyway (the model changed past the grammar) fails
     `nix-instantiate` against the nixpkgs stand-in, which refuses as nixpkgs does
  G3 the nearest value the grammar accepts renders a recipe that instantiates
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.model import Catalog
from ci_tools.render import recipes

from . import harness

REPO = harness.REPO_ROOT
DOUBLE = REPO / "tests" / "nix" / "nixpkgs-double"
CATALOG_TEXT = (REPO / "catalog.yaml").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None, reason="needs nix-instantiate (Debian's nix-bin)"
)


def _branch(catalog: Catalog, name: str, **changes: object) -> Catalog:
    branches = dict(catalog.branches)
    branches[name] = dataclasses.replace(branches[name], **changes)  # type: ignore[arg-type]
    return dataclasses.replace(catalog, branches=branches)


def _cuda_packages(value: str) -> Callable[[Catalog], Catalog]:
    def change(catalog: Catalog) -> Catalog:
        branch = catalog.branches["main"]
        toolkits = tuple(dataclasses.replace(t, cuda_packages=value) for t in branch.toolkits)
        return _branch(catalog, "main", toolkits=toolkits)

    return change


def _python(value: str) -> Callable[[Catalog], Catalog]:
    return lambda catalog: _branch(catalog, "main", python=(value,))


def _requires(package: str, value: str | None) -> Callable[[Catalog], Catalog]:
    def change(catalog: Catalog) -> Catalog:
        packages = dict(catalog.packages)
        packages[package] = dataclasses.replace(packages[package], requires=value)
        return dataclasses.replace(catalog, packages=packages)

    return change


# rule: (the catalog text as a person writes it, what the loader says, the model change,
#        the recipe to evaluate, the accepted neighbour, what Nix says of the refused value)
CASES = {
    "bare cudaPackages": (
        ("cuda_packages: cudaPackages_12_8", "cuda_packages: cudaPackages"),
        "the bare cudaPackages is what nix/nixpkgs.nix redefines",
        _cuda_packages("cudaPackages"),
        "pytorch-python313-cuda12_8-sm90-avx512",
        _cuda_packages("cudaPackages_12_8"),
        "infinite recursion encountered",
    ),
    "torchvision without requires": (
        ("    import_name: torchvision\n    requires: pytorch\n", "    import_name: torchvision\n"),
        "package torchvision (attribute torchvision) has no `requires`",
        _requires("torchvision", None),
        "torchvision-python313-cpu-avx2",
        _requires("torchvision", "pytorch"),
        "called with unexpected argument",  # torchvision takes no cudaSupport, no MKLDNN
    ),
    "python 3.9": (
        ('python: ["3.13"]', 'python: ["3.9"]'),
        "is not a Python the nixpkgs pins have (3.11, 3.12, 3.13)",
        _python("3.9"),
        "pytorch-python39-cpu-avx2",
        _python("3.12"),
        "attribute 'python39Packages' missing",
    ),
    "python 3.10": (
        ('python: ["3.13"]', 'python: ["3.10"]'),
        "is not a Python the nixpkgs pins have (3.11, 3.12, 3.13)",
        _python("3.10"),
        "pytorch-python310-cpu-avx2",
        _python("3.11"),
        "attribute 'python310Packages' missing",
    ),
}


def _instantiate(catalog: Catalog, prefix: str, root: Path) -> subprocess.CompletedProcess[str]:
    """Render branch main of `catalog` past the grammar and instantiate the recipe named
    `prefix...` (the python of the neighbour differs) against the stand-in."""
    shutil.copytree(REPO / "nix", root / "nix")
    shutil.copytree(DOUBLE, root / "double")
    pkgs = root / ".flox" / "pkgs"
    pkgs.mkdir(parents=True)
    env = recipes.environment()
    for file in recipes.render_branch(catalog, "main", env):
        (pkgs / file.path).write_text(file.text, encoding="utf-8")
    stem = prefix.split("-python", 1)[0]
    rest = prefix.split("-", 2)[2]
    name = next(p.stem for p in sorted(pkgs.glob(f"{stem}-python*-{rest}.nix")))
    expr = f"(import ./.flox/pkgs/{name}.nix {{ fetchPinnedNixpkgs = import ./double/fetch.nix; }}).drvPath"
    state = root / "state"
    return subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "-E", expr],
        cwd=root,
        env={**harness.nix_env(state), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize("rule", CASES)
def test_a_refused_value_cannot_evaluate_and_its_neighbour_can(rule: str, tmp_path: Path) -> None:
    (old, new), message, forced, recipe, neighbour, nix_says = CASES[rule]
    assert old in CATALOG_TEXT, old
    (tmp_path / "catalog.yaml").write_text(CATALOG_TEXT.replace(old, new, 1), encoding="utf-8")
    run = harness.run_inprocess(["generate", "--branch", "main", "--out", "out"], tmp_path)
    assert run.code == 2 and message in run.stderr, run.stderr[-2000:]  # G1
    assert "catalog.yaml:" in run.stderr
    shipped = load_catalog(REPO / "catalog.yaml", display_name="catalog.yaml")
    refused = _instantiate(forced(shipped), recipe, tmp_path / "refused")
    assert refused.returncode != 0, f"{rule}: the stand-in evaluated it: {refused.stdout}"  # G2
    assert nix_says in refused.stderr, refused.stderr[-3000:]
    accepted = _instantiate(neighbour(shipped), recipe, tmp_path / "accepted")
    assert accepted.returncode == 0, f"{rule}: {accepted.stderr[-3000:]}"  # G3
    assert accepted.stdout.strip().endswith('.drv"')
