"""Issue 30 item 2 under act: a repository shaped like upstream's (barstoolbluz/build-pytorch:
hand-written recipes of its spellings, no catalog) adopts ci-tools with nothing of ci-tools'
own but the caller workflows docs/adoption.md shows, `ci-tools.yaml` and `runners.yaml`.

* The callers are the page's, with `OWNER/REPO` = acme/ci-tools and `<SHA>` this checkout's
  commit: `uses: acme/ci-tools/.github/workflows/X.yml@<SHA>`. act serves such a remote
  reusable workflow from `--local-repository acme/ci-tools@<SHA>=<folder>` as it serves an
  action (act 0.2.87+, pkg/runner/reusable_workflow.go: with an action cache, a remote call
  is `ActionCache.Fetch(owner/repo, ref)` and `GetTarArchive(.github/workflows/X.yml)`;
  pkg/runner/local_repository_cache.go matches `owner/repo@ref`): the folder is this
  checkout, so what runs is this checkout's reusable workflows.
* `ci-tools` is `ci-tools==<this version>`, from a wheel built once from this checkout and
  found through PIP_FIND_LINKS (the jobs have no index); nothing is installed from the
  adopting repository's checkout, which has no ci-tools source.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from tests.act import harness, host_torch
from tests.act.harness import REPO_ROOT, Scenario, needs_act, push_event
from tests.act.host_torch import HostTorch
from tests.act.test_scenarios import seed_greens
from tests.doubles.flox.test_flox_double import recipe
from tests.test_wheel import build_wheel
from tests.workflows.test_adoption_callers import ADOPTED, PIN, REF, shown

pytestmark = needs_act("nix-instantiate", why="the plan job fingerprints with Nix's parser")

CI_TOOLS = "acme/ci-tools"
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "version"
]
# Upstream's spellings (tests/data/upstream): `-armv8_2`, `-darwin-mps`, torchaudio beside
# PyTorch, and a branch pinned for vLLM; the flox double's minimal recipe, never built here.
VARIANTS = (
    "pytorch-python313-cuda12_8-sm90-armv8_2",
    "torchaudio-python313-cuda12_8-sm90-armv8_2",
    "pytorch-python313-darwin-mps",
)
SETTINGS = """\
# What this repository tells ci-tools beyond its recipes' names.
branches:
  main:
    versions: {pytorch: "TORCH", torchvision: "0.23.0"}
  pytorch-2.9-vllm-0.15.1:
    versions: {pytorch: "2.9.1"}
"""
# Pools without cpu_flags: a build is never tested on them (nothing says which ISA their CPU
# runs), so a stack's legs pass on the build alone; no cache, no GPU test runners.
RUNNERS = """\
preflight:
  flox: "1.14"
  min_free_gb: 1
builders:
  x86_64-linux:
    labels: [self-hosted, Linux, X64]
    timeout_minutes: 60
  aarch64-linux:
    labels: [self-hosted, Linux, ARM64]
    timeout_minutes: 60
  aarch64-darwin:
    labels: [self-hosted, macOS, ARM64]
    timeout_minutes: 60
"""


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ci-tools' wheel, built once from a copy of this checkout's package."""
    dist = tmp_path_factory.mktemp("ci-tools-wheel")
    build_wheel(tmp_path_factory.mktemp("ci-tools-src"), dist)
    return dist


def callers(sha: str) -> dict[str, str]:
    """docs/adoption.md's callers, at acme/ci-tools@SHA, installing ci-tools==VERSION."""
    found = {}
    for name, text in shown().items():
        text = text.replace(ADOPTED, f"ci-tools=={VERSION}")
        found[f".github/workflows/{name}.yml"] = text.replace(REF, CI_TOOLS).replace(PIN, sha)
    assert set(found) == {".github/workflows/ci.yml", ".github/workflows/release.yml"}
    return found


def adopted(tmp_path: Path, sha: str, host: HostTorch) -> Scenario:
    files = {f".flox/pkgs/{name}.nix": recipe(name) for name in VARIANTS}
    files |= {
        ".flox/env.json": '{"name": "torch-builds", "version": 1}\n',
        ".flox/env/manifest.toml": 'version = 1\n[install]\nhello.pkg-path = "hello"\n',
        "ci-tools.yaml": SETTINGS.replace("TORCH", host.torch),
        "runners.yaml": RUNNERS,
        # Where `generate` (run once below, for the host's recipes) writes its tables.
        "README.md": "# torch-builds\n"
        + "".join(
            f"<!-- BEGIN generated: {b} -->\n<!-- END generated: {b} -->\n"
            for b in ("variants", "gpus", "isas", "keys")
        ),
        **callers(sha),
    }
    # The recipes' own helpers, as upstream keeps them beside the recipes.
    for path in sorted((REPO_ROOT / "nix").rglob("*")):
        if path.is_file():
            files[path.relative_to(REPO_ROOT).as_posix()] = path.read_text(encoding="utf-8")
    s = Scenario(
        tmp_path,
        env={"NIXPKGS_DOUBLE_PREBUILT": str(host.description)},
        files=files,
        repositories={f"{CI_TOOLS}@{sha}": REPO_ROOT},
    )
    # The stack the push changes holds this machine's PyTorch for its
    # Python, so its legs pass for real: recipes as this checkout's catalog renders them
    # (host_torch.py), kept as hand-written files; the catalog itself is then removed.
    shutil.copy(REPO_ROOT / "catalog.yaml", s.work / "catalog.yaml")
    host_torch.make_main_host_torch(s, host, cpu=["avx2"])
    # PyTorch alone: a TorchVision of the host's stands in for none, and fails its test.
    keep = {host.variant("avx2")}
    gone: dict[str, str | None] = {"catalog.yaml": None}
    for path in (s.work / ".flox" / "pkgs").glob("*.nix"):
        if path.stem not in keep and path.stem not in VARIANTS:
            gone[path.relative_to(s.work).as_posix()] = None
    s.commit(gone, "recipes of this repository's own, no catalog")
    return s


def test_an_adopted_repository_plans_builds_what_changed_and_ends_green(
    tmp_path: Path, wheels: Path, host: HostTorch
) -> None:
    sha = harness.git(REPO_ROOT, "rev-parse", "HEAD")
    s = adopted(tmp_path, sha, host)
    # The callers' branch lists become the settings' branches, as the page says to do.
    s.ci_tools("sync-workflows")
    before = s.commit({}, "workflows: the settings' branches")
    seed_greens(s, before)  # every stack built green there by earlier runs
    touched = f".flox/pkgs/{host.variant('avx2')}.nix"
    text = (s.work / touched).read_text().replace('description = "', 'description = "again: ')
    after = s.commit({touched: text}, "one recipe changes")
    env = {
        "PIP_FIND_LINKS": f"{harness.wheelhouse()} {wheels}",
        # The flox double's nixpkgs, which a scratch copy of this checkout carries itself.
        "FLOX_DOUBLE_FETCH": str(REPO_ROOT / "tests" / "nix" / "nixpkgs-double" / "fetch.nix"),
    }
    run = s.act("push", push_event(before, after), "ci.yml", env=env)
    text = run.text()
    assert run.result("plan") == "success", text[-4000:]
    assert "ci-tools @ git" not in text
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    stack = host.stack("avx2")
    assert [e["name"] for e in planned.get("include", [])] == [stack], text[-4000:]
    assert s.built() == [host.variant("avx2")], text[-4000:]
    assert run.result("build-0") == "success", text[-4000:]
    assert f"ci-tools/{stack} proven: recorded" in text, text[-4000:]  # its mark green job
    assert run.result("greens") == "success", text[-4000:]
    assert run.result("gate") == "success", text[-4000:]
