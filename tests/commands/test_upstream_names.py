"""Upstream's real recipe names (tests/data/upstream/*.names, barstoolbluz/build-pytorch, which
has no catalog): `matrix`, `detect`, `build` and `test` work on every branch as published, the
flox double building with real Nix. Each branch is a git repository of placeholder recipes
under upstream's file names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ci_tools.build import results
from ci_tools.build.results import Status
from ci_tools.catalog import builtin, nameparse
from tests.conftest import DATA, CliRunner
from tests.doubles.flox.test_flox_double import (
    double_environment,
    make_repo,
    recipe,
    store_environment,
)

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None or shutil.which("git") is None,
    reason="needs nix-bin and git",
)

UPSTREAM = DATA / "upstream"
LISTS = sorted(p.stem for p in UPSTREAM.glob("*.names"))
# Upstream's helper next to its nightly build: no recipe, left out by the settings file.
SETTINGS = 'ignore: ["*-wrapper.nix"]\n'


def recipe_names(listed: str) -> list[str]:
    files = (UPSTREAM / f"{listed}.names").read_text(encoding="utf-8").split()
    return [f.removesuffix(".nix") for f in files if not f.endswith("-wrapper.nix")]


@pytest.fixture(scope="module", params=LISTS)
def upstream(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    listed: str = request.param
    files = {
        f".flox/pkgs/{f}": recipe(f.removesuffix(".nix"))
        for f in (UPSTREAM / f"{listed}.names").read_text(encoding="utf-8").split()
    }
    files["ci-tools.yaml"] = SETTINGS
    files[".gitignore"] = "/results/\nresult-*\n"
    work = make_repo(tmp_path_factory.mktemp(listed), files)
    (work / "LIST").write_text(listed, encoding="utf-8")  # untracked, ignored: none of ours
    return work


def _listed(work: Path) -> str:
    return (work / "LIST").read_text(encoding="utf-8")


def test_the_lists_are_upstreams_branches() -> None:
    assert {
        "main", "main-staging", "pytorch-2.8-python311", "pytorch-2.8-python312",
        "pytorch-2.9-python311", "pytorch-2.9-python313", "pytorch-2.9-vllm-0.14.0",
        "pytorch-2.9-vllm-0.15.1", "pytorch-2.10-python313",
    } < set(LISTS)  # fmt: skip
    old = recipe_names("main-a7121f10a5c1")
    assert sum("armv8.2" in n for n in old) == 8 and sum(n.endswith("-nightly") for n in old) == 2


def test_matrix_schedules_every_published_name(upstream: Path, run_cli: CliRunner) -> None:
    done = run_cli("matrix", "--group", "none", cwd=upstream)
    assert done.returncode == 0, done.stderr
    scheduled = [p for e in json.loads(done.stdout)["include"] for p in e["packages"]]
    assert sorted(scheduled) == sorted(recipe_names(_listed(upstream)))


def test_detect_recommends_a_published_name(upstream: Path, run_cli: CliRunner) -> None:
    gpu = next(
        p for n in recipe_names(_listed(upstream)) if (p := nameparse.parse_name(n)) and p.sm
    )
    assert gpu.isa is not None and gpu.sm is not None
    isa = builtin.ISAS[gpu.isa]
    machine = "aarch64" if isa.platform == "aarch64-linux" else "x86_64"
    host = ("--machine", machine, "--gpu-cc", builtin.gpu(gpu.sm).capability)
    done = run_cli("detect", *host, "--cpu-flags", ",".join(isa.cpuinfo), "--json", cwd=upstream)
    assert done.returncode in (0, 1), done.stderr
    answer = json.loads(done.stdout)
    chosen = [r["package"] for r in answer["recommendations"] if r["package"]]
    assert chosen, done.stdout
    assert set(chosen) <= set(recipe_names(_listed(upstream)))


def test_build_and_test_a_stack_through_the_flox_double(
    upstream: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    published = set(recipe_names(_listed(upstream)))
    base = next(n for n in sorted(published) if n.startswith("pytorch-") and "-cpu-avx2" in n)
    stack = [base, *(d for d in published if d == base.replace("pytorch-", "torchvision-", 1))]
    env = double_environment(tmp_path)
    done = run_cli("build", *stack, cwd=upstream, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in stack:
        record = results.load(results.result_path(upstream / "results", name))
        assert record.build is not None and record.build.status is Status.PASSED
        assert record.branch == "main"  # the checked-out branch of the scratch repository
    # The double's outputs are placeholders with no interpreter: the test runs and fails,
    # saying so, into the same record. Its nix-store sees the double's private store.
    done = run_cli("test", base, "--import-runs", "0", cwd=upstream, env=store_environment(env))
    assert done.returncode == 1, done.stdout + done.stderr
    record = results.load(results.result_path(upstream / "results", base))
    assert record.build is not None and record.test is not None
    assert record.test.status is Status.FAILED
    assert record.test.checks[0].name == "interpreter"
