"""`ci-tools matrix` as a user and a workflow run it: a separate process from this checkout."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, CliRunner

GOLDEN = REPO_ROOT / "tests" / "golden"


def check_golden(name: str, text: str) -> None:
    """Compare with tests/golden/NAME; `UPDATE_GOLDEN=1 pytest ...` rewrites it."""
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} is missing: run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs (UPDATE_GOLDEN=1 updates it)"


@pytest.mark.parametrize(
    ("golden", "args", "count"),
    [
        ("matrix-main.json", ("--branch", "main"), 45),
        ("matrix-main-group-none.json", ("--branch", "main", "--group", "none"), 89),
        ("matrix-cuda-13_0.json", ("--branch", "cuda-13_0"), 60),
    ],
)
def test_shipped_catalog_matrix(
    run_cli: CliRunner, golden: str, args: tuple[str, ...], count: int
) -> None:
    result = run_cli("matrix", *args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    entries = json.loads(result.stdout)["include"]
    assert len(entries) == count
    # Nothing asked for fingerprints: the entries carry none.
    assert not any("fingerprint" in e for e in entries)
    check_golden(golden, result.stdout)
    # With them, the same entries each carry one. They follow every recipe edit, so the
    # golden file leaves them out; tests/plan/test_fingerprint.py holds them to account.
    fingerprinted = run_cli("matrix", *args, "--fingerprints")
    assert fingerprinted.returncode == 0, fingerprinted.stderr
    assert fingerprinted.stderr == ""
    entries = json.loads(fingerprinted.stdout)["include"]
    assert all(re.fullmatch(r"(nix|raw)-[0-9a-f]{32}", e["fingerprint"]) for e in entries)
    check_golden(
        golden, re.sub(r', "fingerprint": "(nix|raw)-[0-9a-f]{32}"', "", fingerprinted.stdout)
    )


def _recording(tmp_path: Path, tools: tuple[str, ...]) -> tuple[Path, set[str]]:
    """A PATH folder whose installed `tools` log their arguments to tmp_path/calls, then run
    the real ones; and which tools it records."""
    folder = tmp_path / "bin"
    folder.mkdir()
    recorded = set()
    for tool in tools:
        real = shutil.which(tool)
        if real is not None:
            script = folder / tool
            script.write_text(
                f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path}/calls"\nexec "{real}" "$@"\n'
            )
            script.chmod(0o755)
            recorded.add(tool)
    return folder, recorded


def test_a_plain_matrix_asks_git_and_nix_for_nothing(tmp_path: Path, run_cli: CliRunner) -> None:
    """The matrix for a named branch needs no fingerprint: no git read, no recipe parsed."""
    folder, recorded = _recording(tmp_path, ("git", "nix-instantiate"))
    if "git" not in recorded:
        pytest.skip("git is not installed")
    calls = tmp_path / "calls"
    plain = run_cli("matrix", "--branch", "main", extra_path=[folder])
    assert plain.returncode == 0, plain.stderr
    logged = calls.read_text() if calls.exists() else ""
    assert not [line for line in logged.splitlines() if line.startswith("git ")]
    assert ".flox/pkgs/" not in logged
    # The recorder sees what fingerprints cost: git's tree and a parse of the recipes.
    output = tmp_path / "output"
    workflow = run_cli(
        "matrix", "--branch", "main", "--github-output",
        env={"GITHUB_OUTPUT": str(output)}, extra_path=[folder],
    )  # fmt: skip
    assert workflow.returncode == 0, workflow.stderr
    logged = calls.read_text()
    assert "git ls-tree" in logged
    assert (".flox/pkgs/" in logged) == ("nix-instantiate" in recorded)


def test_without_nix_the_shipped_recipes_warn_of_nothing(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """nix/nixpkgs.nix names `./overlays/NAME.nix` in a comment: no import, no warning."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(git)
    result = run_cli("matrix", "--branch", "main", "--fingerprints", env={"PATH": str(only_git)})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    entries = json.loads(result.stdout)["include"]
    assert all(re.fullmatch(r"(nix|raw)-[0-9a-f]{32}", e["fingerprint"]) for e in entries)


def test_matrix_imports_neither_jinja2_nor_pygithub() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ci_tools", "matrix", "--branch", "main"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    imported = set(re.findall(r"\|\s+([\w.]+)$", result.stderr, flags=re.MULTILINE))
    assert "ci_tools.plan.matrix" in imported  # the check sees the command's own imports
    heavy = {m for m in imported if m.split(".")[0] in {"jinja2", "github", "tenacity", "torch"}}
    assert heavy == set()
    # Nor, asked for no fingerprint, the code that computes them (PYTHONDONTWRITEBYTECODE
    # machines compile every module they import at every start).
    fingerprinting = {"fingerprint", "nixinputs", "changes", "schedule", "statuses"}
    assert {m for m in imported if m.removeprefix("ci_tools.plan.") in fingerprinting} == set()
    # Nor what only --until-green reads with, nor difflib (only a misspelt name needs it).
    assert {"ci_tools.base.github_answers", "difflib"} & imported == set()
    # Nor `proc`: the overlays' check asks Nix only for an exit status.
    assert "ci_tools.base.proc" not in imported
    # Nor `shutil` (argparse's width, `which`), which imports the compression modules.
    assert {"shutil", "bz2", "lzma"} & imported == set()


def test_github_output_writes_the_contract(tmp_path: Path, run_cli: CliRunner) -> None:
    out = tmp_path / "output"
    out.write_text("earlier=1\n")
    result = run_cli(
        "matrix", "--branch", "main", "--github-output", env={"GITHUB_OUTPUT": str(out)}
    )
    assert result.returncode == 0, result.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "earlier=1"  # appended, as GitHub expects
    outputs = dict(line.split("=", 1) for line in lines[1:])
    assert list(outputs) == [
        "count",
        "shards",
        "matrix-0",
        "matrix-1",
        "matrix-2",
        "matrix-3",
        "fingerprint-kind",
    ]
    # The matrix says which kind of fingerprint it computed (issue 19 item 1).
    kind = outputs["fingerprint-kind"]
    assert kind in ("nix", "raw")
    assert (outputs["count"], outputs["shards"]) == ("45", "1")
    assert json.loads(outputs["matrix-0"]) == json.loads(result.stdout)
    # The build legs record each entry's fingerprint when they pass (mark-green).
    entries = json.loads(outputs["matrix-0"])["include"]
    assert all(e["fingerprint"].startswith(f"{kind}-") for e in entries)
    assert outputs["matrix-1"] == '{"include":[]}'


def test_github_output_needs_the_variable(run_cli: CliRunner) -> None:
    result = run_cli("matrix", "--branch", "main", "--github-output")
    assert result.returncode == 2
    assert "$GITHUB_OUTPUT" in result.stderr
    assert result.stdout == ""


def test_nothing_left_prints_an_empty_matrix(tmp_path: Path, run_cli: CliRunner) -> None:
    out = tmp_path / "output"
    result = run_cli(
        "matrix",
        "--branch",
        "main",
        "--select",
        "*-armv9",
        "--platform",
        "x86_64-linux",
        "--github-output",
        env={"GITHUB_OUTPUT": str(out), "GITHUB_ACTIONS": "true"},
    )
    assert result.returncode == 0
    assert json.loads(result.stdout) == {"include": []}
    assert result.stderr.startswith("::notice::the matrix is empty: the selection matched none")
    assert "count=0\nshards=0\n" in out.read_text()


def test_a_select_glob_that_matches_nothing_is_bad_input(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """Issue 19 item 5: a release dispatched with a typo in its selection was a green run
    that did nothing. Now the plan stops and says why, before any build."""
    out = tmp_path / "output"
    result = run_cli(
        "matrix",
        "--branch",
        "main",
        "--select",
        "*-sm103-*",
        "--select",
        "pytorch-*",
        "--github-output",
        env={"GITHUB_OUTPUT": str(out)},
    )
    assert result.returncode == 2
    assert re.search(
        r'--select "\*-sm103-\*" matches none of the \d+ variants of branch main', result.stderr
    )
    assert result.stdout == "" and not out.exists()
    assert "Traceback" not in result.stderr


def test_selection_options_combine(run_cli: CliRunner) -> None:
    result = run_cli(
        "matrix",
        "--branch",
        "cuda-12_9",
        "--package",
        "torchvision",
        "--platform",
        "aarch64-linux",
        "--select",
        "*-sm1*",
        "--skip",
        "*-armv9",
    )
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["include"]
    assert [e["name"] for e in entries] == [
        "py313-sm100-armv8_2",
        "py313-sm103-armv8_2",
        "py313-sm120-armv8_2",
    ]
    assert all(e["packages"][0].startswith("pytorch-") for e in entries)


def test_unknown_branch_lists_the_known_ones(run_cli: CliRunner) -> None:
    result = run_cli("matrix", "--branch", "cuda-14_0")
    assert result.returncode == 2
    assert 'unknown branch "cuda-14_0"' in result.stderr
    assert "main, cuda-12_9, cuda-13_0" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_package_offers_the_close_one(run_cli: CliRunner) -> None:
    result = run_cli("matrix", "--branch", "main", "--package", "torchvison")
    assert result.returncode == 2
    assert 'did you mean "torchvision"?' in result.stderr


def test_bad_platform_is_an_argument_error(run_cli: CliRunner) -> None:
    result = run_cli("matrix", "--platform", "x86_64-darwin")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def _repo_copy(tmp_path: Path, runners: str) -> Path:
    shutil.copy(REPO_ROOT / "catalog.yaml", tmp_path / "catalog.yaml")
    (tmp_path / "runners.yaml").write_text(runners)
    return tmp_path


def test_inventory_errors_are_annotations_under_actions(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _repo_copy(tmp_path, "builders:\n  x86_64-linux:\n    lables: [a]\n")
    result = run_cli("matrix", "--branch", "main", cwd=root, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 2
    assert "runners.yaml:3: unknown key" in result.stderr
    assert re.search(
        r"^::error file=runners\.yaml,line=3::unknown key \"lables\"", result.stdout, re.M
    )
    # One mistake, one annotation: not also "missing the required key labels".
    assert result.stdout.count("::error ") == 1


def test_catalog_errors_are_annotations_under_actions(tmp_path: Path, run_cli: CliRunner) -> None:
    broken = (
        (REPO_ROOT / "catalog.yaml")
        .read_text()
        .replace("    family: Hopper\n", "    famly: Hopper\n")
    )
    (tmp_path / "catalog.yaml").write_text(broken)
    line = broken.splitlines().index("    famly: Hopper") + 1
    result = run_cli("matrix", "--branch", "main", cwd=tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 2
    assert f"::error file=catalog.yaml,line={line}::unknown key" in result.stdout


def test_platform_without_pool_names_it_and_its_variants(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = _repo_copy(
        tmp_path,
        "builders:\n  x86_64-linux:\n    labels: [a]\n  aarch64-darwin:\n    labels: [b]\n",
    )
    result = run_cli("matrix", "--branch", "main", cwd=root)
    assert result.returncode == 2
    assert "runners.yaml:1: no builder pool for platform aarch64-linux" in result.stderr
    assert "pytorch-python313-cpu-armv8_2" in result.stderr
    assert "and 18 more" in result.stderr  # 28 aarch64-linux packages, ten named
    ok = run_cli(
        "matrix",
        "--branch",
        "main",
        "--runners",
        str(root / "runners.yaml"),
        "--platform",
        "x86_64-linux",
    )
    assert ok.returncode == 0, ok.stderr
    assert {tuple(e["runs_on"]) for e in json.loads(ok.stdout)["include"]} == {("a",)}


@pytest.mark.parametrize(
    ("test_runner_labels", "cache", "says"),
    [
        # Every label of the test runner is a pool's: GitHub may run its jobs on a pool host.
        ("[self-hosted, Linux, X64]", "", "test_runners[0].labels: builders.x86_64-linux has"),
        # A cache that could not carry a build to the test runner: refused, never a split.
        (
            "[self-hosted, Linux, X64, gpu-sm90]",
            "cache:\n  url: file:///srv/nix-cache\n",
            'runners.yaml:10: cache is missing the required key "public_keys"',
        ),
    ],
)
def test_an_inventory_whose_routes_cannot_be_served_is_refused(
    tmp_path: Path, run_cli: CliRunner, test_runner_labels: str, cache: str, says: str
) -> None:
    """Issue 28: `ci-tools matrix` never emits a route the inventory cannot serve."""
    root = _repo_copy(
        tmp_path,
        "builders:\n"
        "  x86_64-linux:\n"
        "    labels: [self-hosted, Linux, X64, builder-x86_64]\n"
        "test_runners:\n"
        f"  - labels: {test_runner_labels}\n"
        "    platform: x86_64-linux\n"
        "    sm: sm90\n"
        "    cpu_flags: [avx2]\n" + cache,
    )
    result = run_cli("matrix", "--branch", "main", "--platform", "x86_64-linux", cwd=root)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "runners.yaml:" in result.stderr and says in result.stderr, result.stderr


def test_explicit_runners_file_must_exist(tmp_path: Path, run_cli: CliRunner) -> None:
    result = run_cli("matrix", "--runners", str(tmp_path / "none.yaml"))
    assert result.returncode == 2
    assert "file not found" in result.stderr


def test_benchmark_script_runs_and_checks_its_sharding() -> None:
    """A smoke run with tiny sizes: the figures are printed, the sharding checks pass.
    No timing is asserted; the goals are the script's business."""
    result = subprocess.run(
        [
            sys.executable,
            "benchmarks/bench_matrix.py",
            "--runs",
            "1",
            "--pythons",
            "2",
            "--sms",
            "22",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"cold start .* ratio \d+\.\dx", result.stdout)
    assert "554 variants, --group none: 554 entries, 554 in 3 shards" in result.stdout
    assert "--group stack: 278 entries, 278 in 2 shards" in result.stdout
    assert result.stdout.count("sharding right") == 2


def _synthetic_checkout(tmp_path: Path, pythons: int, sms: int) -> Path:
    from benchmarks.bench_matrix import synthetic

    made = synthetic(pythons, sms)
    (tmp_path / "catalog.yaml").write_text(made.catalog)
    (tmp_path / "runners.yaml").write_text(made.runners)
    return tmp_path


def test_more_than_256_entries_are_sharded_with_a_notice(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = _synthetic_checkout(tmp_path, pythons=2, sms=22)
    out = tmp_path / "output"
    result = run_cli(
        "matrix",
        "--branch",
        "synthetic",
        "--group",
        "none",
        "--github-output",
        cwd=root,
        env={"GITHUB_OUTPUT": str(out), "GITHUB_ACTIONS": "true"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(
        "::notice::554 entries are more than GitHub's 256 per matrix: "
        "split into 3 shards (matrix-0 ... matrix-2)\n"
    )
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert (outputs["count"], outputs["shards"]) == ("554", "3")
    sizes = [len(json.loads(outputs[f"matrix-{i}"])["include"]) for i in range(4)]
    assert sizes == [185, 185, 184, 0]


def test_what_does_not_fit_waits_for_the_next_run(tmp_path: Path, run_cli: CliRunner) -> None:
    """Issue 19 item 6: over 1,024 entries the plan failed on every push, so the branch never
    caught up. Now one run takes what fits (4 x 256) and a notice names the rest."""
    root = _synthetic_checkout(tmp_path, pythons=2, sms=44)
    out = tmp_path / "output"
    args = ("matrix", "--branch", "synthetic", "--group", "none", "--github-output")
    result = run_cli(*args, cwd=root, env={"GITHUB_OUTPUT": str(out), "GITHUB_ACTIONS": "true"})
    assert result.returncode == 0, result.stderr
    assert "::notice::58 of 1082 stacks wait for the next run" in result.stderr
    assert "without --until-green nothing plans them again" in result.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert (outputs["count"], outputs["shards"]) == ("1024", "4")
    planned = json.loads(result.stdout)["include"]
    assert len(planned) == 1024  # stdout (the planned artifact) is what runs
    waiting = re.search(r"Waiting: ([^ ,]+)", result.stderr)
    assert waiting is not None and waiting[1] not in {e["name"] for e in planned}
    total = sum(len(outputs[f"matrix-{i}"].encode("utf-16-le")) for i in range(4))
    assert total < 1_000_000
    # Each entry carries its build leg and its test leg (issue 18): more shards take more, up
    # to what GitHub's 1 MB of job outputs holds, here 1043 entries.
    wider = run_cli(*args, "--max-shards", "6", cwd=root, env={"GITHUB_OUTPUT": str(out)})
    assert wider.returncode == 0, wider.stderr
    assert len(json.loads(wider.stdout)["include"]) == 1043
    assert "39 of 1082 stacks wait for the next run" in wider.stderr


def test_over_1024_stacks_converge_over_successive_pushes(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """Issue 19 item 6: 1,082 planned stacks, three pushes. Each run takes what fits, its
    legs mark those green, and the next push plans the rest; then nothing is left."""
    from tests.doubles.github.server import GitHubDouble
    from tests.gitutil import commit_all, init, write

    root = _synthetic_checkout(init(tmp_path / "repo"), pythons=2, sms=44)
    commit_all(root, "catalog")
    out = tmp_path / "output"
    with GitHubDouble(lifetime=300) as github:
        env = {
            "GITHUB_OUTPUT": str(out),
            "GITHUB_TOKEN": "ghs_plan",
            "GITHUB_REPOSITORY": "acme/torch-builds",
            "GITHUB_API_URL": github.url,
        }
        args = ("matrix", "--branch", "synthetic", "--group", "none", "--until-green")
        built: list[int] = []
        for push in range(3):
            result = run_cli(*args, "--github-output", cwd=root, env=env)
            assert result.returncode == 0, result.stderr
            planned = json.loads(result.stdout)["include"]
            built.append(len(planned))
            head = subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
            ).stdout.strip()
            for entry in planned:  # every leg passes and marks its stack green
                github.seed_status(
                    head, "success", f"ci-tools/{entry['name']}", f"inputs {entry['fingerprint']}"
                )
            write(root, "README.md", f"push {push}\n")
            commit_all(root, f"docs {push}")
        assert built == [1024, 58, 0]
