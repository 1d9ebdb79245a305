"""One regression test per finding of issue 12 that this suite owns (items 1-3, 6-9, 11-13).

Each reproduces the audit's input and asserts what must happen instead; each failed on the
code before the fix.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import threading
from pathlib import Path

import pytest

from . import harness
from .mutations import MARKER

CATALOG = (harness.REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")
RUNNERS = (harness.REPO_ROOT / "runners.yaml").read_text(encoding="utf-8")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "catalog.yaml").write_text(CATALOG, encoding="utf-8")
    (tmp_path / "runners.yaml").write_text(RUNNERS, encoding="utf-8")
    return tmp_path


def _catalog(work: Path, old: str, new: str) -> None:
    assert old in CATALOG, old
    (work / "catalog.yaml").write_text(CATALOG.replace(old, new, 1), encoding="utf-8")


def _generate(work: Path, *extra: str) -> harness.Run:
    return harness.run_inprocess(["generate", "--branch", "main", "--out", "out", *extra], work)


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


# --- item 1: shell injection from the catalog ------------------------------------------------


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="needs nix-instantiate")
@pytest.mark.parametrize(
    "entry",
    [f'"X=0; touch {MARKER}; export Y"', '"A B"', f'"$(touch {MARKER})"', '"FBGEMM\\ntouch P"'],
)
def test_a_shell_payload_in_disables_never_runs(work: Path, tmp_path: Path, entry: str) -> None:
    _catalog(work, "disables: [FBGEMM, MKLDNN, NNPACK]", f"disables: [FBGEMM, {entry}]")
    run = _generate(work)
    # Whatever was rendered, run its shell hooks: the marker must never appear.
    rendered = sorted((work / "out").glob("*-sm61-avx.nix")) if run.code == 0 else []
    recipes = harness.as_checkout(rendered, tmp_path / "checkout")
    snippets = harness.shell_snippets(recipes, tmp_path / "nix") if recipes else {}
    harness.run_snippets(snippets, tmp_path / "bash")
    assert run.code == 2, run.stderr
    line = _line_of((work / "catalog.yaml").read_text(encoding="utf-8"), "disables: [FBGEMM,")
    assert f"catalog.yaml:{line}: avx.disables:" in run.stderr
    assert "PyTorch feature name" in run.stderr
    assert not (work / "out").exists()


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="needs nix-instantiate")
def test_the_shipped_disables_render_to_snippets_that_run_cleanly(
    work: Path, tmp_path: Path
) -> None:
    """The other half: what the grammar accepts renders to shell that does what it says."""
    assert _generate(work).code == 0
    recipes = harness.as_checkout(
        sorted((work / "out").glob("pytorch-*-sm61-avx.nix")), tmp_path / "checkout"
    )
    snippets = harness.shell_snippets(recipes, tmp_path / "nix")
    assert any("export USE_FBGEMM=0" in s for s in snippets.values())
    harness.run_snippets(snippets, tmp_path / "bash")


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        ("compiler_flags: [-mavx]", 'compiler_flags: ["-mavx; touch x"]', "compiler flag"),
        ("cpuinfo: [avx]", 'cpuinfo: ["avx avx2"]', "/proc/cpuinfo flag"),
        ("torch_capability: AVX2", 'torch_capability: "AVX2$(id)"', "torch CPU capability"),
        ("workload: bf16-training", 'workload: "a b"', "workload name"),
    ],
)
def test_every_shell_bound_isa_value_has_a_grammar(
    work: Path, old: str, new: str, what: str
) -> None:
    _catalog(work, old, new)
    run = _generate(work)
    assert run.code == 2
    assert what in run.stderr and "catalog.yaml:" in run.stderr


# --- items 2 and 3: what generate deletes, and all-or-nothing ---------------------------------


def test_out_dot_keeps_generated_files_in_other_folders(work: Path) -> None:
    """Item 2: `--out .` removed 105 tracked files (.flox/pkgs, tests/golden)."""
    assert _generate(work).code == 0
    golden = work / "tests" / "golden" / "x.nix"
    golden.parent.mkdir(parents=True)
    shutil.copy(next((work / "out").glob("*.nix")), golden)
    run = harness.run_inprocess(["generate", "--branch", "main", "--out", "."], work)
    assert run.code == 0, run.stderr
    assert golden.exists()
    assert (work / "out").is_dir() and any((work / "out").glob("*.nix"))


def test_a_lone_surrogate_changes_nothing(work: Path) -> None:
    """Item 3: a lone surrogate left 26 recipes rewritten and 19 stale, with a traceback."""
    assert _generate(work).code == 0
    before = harness.snapshot(work / "out")
    _catalog(work, "family: Hopper", 'family: "Hopper \\ud83d"')
    run = _generate(work)
    assert run.code == 2 and run.crash is None
    assert "catalog.yaml:" in run.stderr and "surrogate" in run.stderr
    harness.check_unchanged(before, harness.snapshot(work / "out"), "out/")


def test_check_reports_what_a_killed_run_left(work: Path) -> None:
    """Item 3: temp files of a killed run survived the re-run and --check did not see them."""
    assert _generate(work).code == 0
    (work / "out" / ".ci-tools-staging").mkdir()
    (work / "out" / ".pytorch-x.nix.abcdefgh.tmp").write_text("half", encoding="utf-8")
    check = _generate(work, "--check")
    assert check.code == 1
    assert "left by an interrupted generate" in check.stderr
    assert _generate(work).code == 0
    assert not (work / "out" / ".ci-tools-staging").exists()
    assert not list((work / "out").glob(".*.tmp"))
    assert _generate(work, "--check").code == 0


# --- items 6-9: values and cross-table rules -------------------------------------------------


def test_an_unquoted_python_version_is_refused_at_its_line(work: Path) -> None:
    """Item 6: `python: [3.10]` was read as 3.1: 89 python31 recipes, exit 0."""
    _catalog(work, 'python: ["3.13"]', "python: [3.10]")
    run = _generate(work)
    assert run.code == 2
    line = _line_of((work / "catalog.yaml").read_text(encoding="utf-8"), "python: [3.10]")
    # The message quotes what was written (3.10), not what YAML made of it (3.1).
    assert (
        f'catalog.yaml:{line}: main.python: must be a quoted string such as "3.10": '
        "YAML reads an unquoted 3.10 as the number 3.1" in run.stderr
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("deep: " + "[" * 300 + "]" * 300 + "\n", "nested deeper"),
        ("deep: " + "[" * 40 + "]" * 40 + "\n", "nested deeper"),
        ("big: " + "9" * 5000 + "\n", "digits"),
    ],
)
@pytest.mark.parametrize("target", ["catalog.yaml", "runners.yaml"])
def test_deep_nesting_and_huge_numbers_are_bad_input(
    work: Path, text: str, needle: str, target: str
) -> None:
    """Item 7: RecursionError / ValueError with exit 1."""
    path = work / target
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    run = harness.run_inprocess(["matrix", "--branch", "main"], work)
    assert run.crash is None and run.code == 2, run.stderr
    last = len(path.read_text(encoding="utf-8").splitlines())
    assert f"{target}:{last}: " in run.stderr and needle in run.stderr


def test_gpu_cc_with_huge_or_fullwidth_numbers_is_bad_input(work: Path) -> None:
    """Items 7 and 13: `--gpu-cc` with 5000 digits, and fullwidth 9.0, exited 1."""
    for value in ("9" * 5000 + ".0", "\uff19.\uff10"):
        run = harness.run_inprocess(
            [
                "detect",
                "--branch",
                "main",
                "--gpu-cc",
                value,
                "--cpu-flags",
                "avx2",
                "--machine",
                "x86_64",
            ],
            work,
        )
        assert run.crash is None and run.code == 2, run.stderr
        assert "--gpu-cc" in run.stderr


def test_a_readme_marker_in_catalog_text_is_refused(work: Path) -> None:
    """Item 8: the README grew on every generate and --check never passed again."""
    _catalog(work, "description: AVX2\n", 'description: "AVX2 <!-- END generated: isas -->"\n')
    run = _generate(work)
    assert run.code == 2
    assert "avx2.description" in run.stderr and "<!--" in run.stderr


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        (
            "    import_name: torchaudio\n    requires: pytorch",
            "    import_name: torchaudio\n    requires: torchvision",
            "torchaudio requires torchvision, which requires pytorch",
        ),
        (
            "    import_name: torch          #",
            "    requires: pytorch\n    import_name: torch  #",
            "requires itself",
        ),
        ("cpuinfo: [avx]", "cpuinfo: []", "avx.cpuinfo must not be empty"),
        ('python: ["3.13"]', "python: []", "main.python must not be empty"),
    ],
)
def test_cross_table_rules(work: Path, old: str, new: str, needle: str) -> None:
    """Item 9: self-requirement, empty cpuinfo (no SIGILL guard), empty python (no recipes)."""
    _catalog(work, old, new)
    run = _generate(work)
    assert run.code == 2, run.stdout
    assert needle in run.stderr and "catalog.yaml:" in run.stderr


# --- item 11: bounds ------------------------------------------------------------------------


def test_max_shards_is_bounded(work: Path) -> None:
    for value in ("10000000", "1000000", "0", "\uff14"):
        run = harness.run_inprocess(["matrix", "--branch", "main", "--max-shards", value], work)
        assert run.code == 2 and "--max-shards" in run.stderr, run.stderr


def test_a_fifo_as_runners_is_refused_without_blocking(work: Path) -> None:
    fifo = work / "fifo.yaml"
    os.mkfifo(fifo)
    done: list[harness.Run] = []
    thread = threading.Thread(
        target=lambda: done.append(
            harness.run_subprocess(
                ["matrix", "--branch", "main", "--runners", str(fifo)], work, work
            )
        ),
        daemon=True,
    )
    thread.start()
    thread.join(60)
    if not done:  # unblock the reader before failing, so the test run can end
        with fifo.open("w") as handle:
            handle.write("")
        thread.join(10)
        pytest.fail("matrix blocked on a FIFO")
    assert done[0].code == 2 and "not a regular file" in done[0].stderr


# --- item 13: arguments and output paths ----------------------------------------------------


@pytest.mark.parametrize("command", ["generate", "matrix", "detect"])
def test_an_empty_branch_is_bad_input(work: Path, command: str) -> None:
    run = harness.run_inprocess([command, "--branch", ""], work)
    assert run.code == 2 and "--branch" in run.stderr


def test_detect_refuses_an_org_a_shell_would_read(work: Path) -> None:
    run = harness.run_inprocess(["detect", "--branch", "main", "--org", "a b; rm -rf ~"], work)
    assert run.code == 2 and "--org" in run.stderr


def test_out_that_is_a_file_is_bad_input(work: Path) -> None:
    (work / "out").write_text("a file\n", encoding="utf-8")
    run = _generate(work)
    assert run.code == 2 and run.crash is None
    assert "not a folder" in run.stderr
    assert (work / "out").read_text(encoding="utf-8") == "a file\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_out_is_bad_input(work: Path) -> None:
    (work / "out").mkdir()
    (work / "out").chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        run = _generate(work)
    finally:
        (work / "out").chmod(stat.S_IRWXU)
    assert run.code == 2 and run.crash is None


def test_report_to_a_bad_path_is_bad_input(work: Path) -> None:
    records = harness.REPO_ROOT / "tests" / "data" / "results-cuda-12_9"
    for flag in ("--markdown", "--json"):
        for path in ("/proc/version/x", str(work / "catalog.yaml" / "x"), str(work)):
            run = harness.run_subprocess(["report", str(records), flag, path], work, work)
            assert run.crash is None and run.code == 2, run.stderr
            assert path in run.stderr or str(Path(path).parent) in run.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_on_a_full_disk_is_an_error_not_a_traceback(work: Path) -> None:
    with Path("/dev/full").open("w") as full:
        done = __import__("subprocess").run(
            [sys.executable, "-m", "ci_tools", "matrix", "--branch", "main"],
            cwd=work,
            env={**os.environ, "PYTHONPATH": str(harness.REPO_ROOT)},
            stdout=full,
            stderr=__import__("subprocess").PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert "No space left on device" in done.stderr


INVALID_LABELS = [
    "${{ secrets.X }}",
    "a\nb",
    "a\x00b",
    "*",
    "$(id)",
    "`id`",
    "a b",
    "a,b",
    "",
    " ",
    "-leading",
    "a;b",
    "x" * 101,
]


@pytest.mark.parametrize("label", INVALID_LABELS)
def test_invalid_runner_labels_are_refused(work: Path, label: str) -> None:
    """Item 13: 13 invalid runner labels were accepted."""
    import json

    text = RUNNERS.replace(
        "labels: [self-hosted, Linux, X64, builder-x86_64]\n",
        f"labels: [self-hosted, {json.dumps(label)}]\n",
        1,
    )
    assert text != RUNNERS
    (work / "runners.yaml").write_text(text, encoding="utf-8")
    run = harness.run_inprocess(["matrix", "--branch", "main"], work)
    assert run.code == 2, run.stdout[:300]
    line = _line_of(text, "labels: [self-hosted, ")
    assert f"runners.yaml:{line}: builders.x86_64-linux.labels:" in run.stderr
