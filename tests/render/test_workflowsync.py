"""sync-workflows: the workflows' branch lists follow the catalog, nothing else changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci_tools.base.errors import SourceError
from ci_tools.render.workflowsync import CI_WORKFLOW, MANAGED, RELEASE_WORKFLOW, sync_text
from tests.conftest import REPO_ROOT, CliRunner

BRANCHES = ("main", "cuda-12_9", "cuda-13_0")

CI_STALE = """\
# A CI workflow. Comments and layout stay.
name: ci

on:
  push:
    branches:
      - main # the default branch
      - cuda-12_9
    # paths are not filtered
  pull_request:
    branches: [main, old-branch]

permissions: {} # nothing by default

jobs:
  plan:
    runs-on: ubuntu-latest
    steps:
      - name: A line longer than eighty characters, which ruamel must not wrap at all, ever
        if: github.event_name == 'push' && github.ref == 'refs/heads/main' && github.repository == 'a/b'
        run: echo "plan"
"""

CI_SYNCED = """\
# A CI workflow. Comments and layout stay.
name: ci

on:
  push:
    branches:
      - main # the default branch
      - cuda-12_9
      - cuda-13_0
    # paths are not filtered
  pull_request:
    branches: [main, cuda-12_9, cuda-13_0]

permissions: {} # nothing by default

jobs:
  plan:
    runs-on: ubuntu-latest
    steps:
      - name: A line longer than eighty characters, which ruamel must not wrap at all, ever
        if: github.event_name == 'push' && github.ref == 'refs/heads/main' && github.repository == 'a/b'
        run: echo "plan"
"""

RELEASE_STALE = """\
name: release

on:
  workflow_dispatch:
    inputs:
      branch:
        description: The branch to release
        type: choice
        # Kept equal to the catalog by ci-tools sync-workflows.
        options:
        - "cuda-13_0"
        - "main"

        default: "main"
      dry_run:
        type: boolean
        default: true

permissions: {}
"""

RELEASE_SYNCED = """\
name: release

on:
  workflow_dispatch:
    inputs:
      branch:
        description: The branch to release
        type: choice
        # Kept equal to the catalog by ci-tools sync-workflows.
        options:
        - "main"
        - "cuda-12_9"
        - "cuda-13_0"

        default: "main"
      dry_run:
        type: boolean
        default: true

permissions: {}
"""


def test_stale_ci_lists_are_rewritten_and_nothing_else() -> None:
    stale, text = sync_text(CI_STALE, "ci.yml", MANAGED[CI_WORKFLOW], BRANCHES)
    assert [(s.label, s.line, s.found) for s in stale] == [
        ("on.push.branches", 6, ("main", "cuda-12_9")),
        ("on.pull_request.branches", 11, ("main", "old-branch")),
    ]
    assert text == CI_SYNCED


def test_release_choice_keeps_its_quotes_and_layout() -> None:
    stale, text = sync_text(RELEASE_STALE, "release.yml", MANAGED[RELEASE_WORKFLOW], BRANCHES)
    assert [s.label for s in stale] == ["on.workflow_dispatch.inputs.branch.options"]
    assert text == RELEASE_SYNCED


@pytest.mark.parametrize(
    ("name", "text"), [(CI_WORKFLOW, CI_SYNCED), (RELEASE_WORKFLOW, RELEASE_SYNCED)]
)
def test_synced_workflow_is_left_byte_for_byte(name: str, text: str) -> None:
    assert sync_text(text, name, MANAGED[name], BRANCHES) == ((), text)


@pytest.mark.parametrize(
    "path", sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml")), ids=lambda p: p.name
)
def test_shipped_workflows_round_trip_exactly(path: Path) -> None:
    # Raises if ruamel could not rewrite the file without reformatting it.
    text = path.read_text(encoding="utf-8")
    assert sync_text(text, path.name, MANAGED.get(path.name, ()), BRANCHES) == ((), text)


def test_layout_ruamel_cannot_reproduce_is_refused() -> None:
    odd = CI_STALE.replace("name: ci\n", "name:     ci\n")
    with pytest.raises(SourceError, match="edit its branch lists by hand"):
        sync_text(odd, "ci.yml", MANAGED[CI_WORKFLOW], BRANCHES)


def test_ci_without_push_branches_is_an_error() -> None:
    text = "on:\n  push:\n    tags: [v*]\n"
    with pytest.raises(SourceError, match=r"ci.yml:1: on.push.branches is missing"):
        sync_text(text, "ci.yml", MANAGED[CI_WORKFLOW], BRANCHES)


def test_branch_list_that_is_no_list_is_an_error() -> None:
    text = "on:\n  push:\n    branches: main\n"
    with pytest.raises(SourceError, match=r"ci.yml:3: on.push.branches must be a list"):
        sync_text(text, "ci.yml", MANAGED[CI_WORKFLOW], BRANCHES)


def test_malformed_yaml_names_the_line() -> None:
    # The unclosed list is noticed where the text ends.
    with pytest.raises(SourceError, match=r"ci.yml:4: malformed YAML: expected ',' or ']'"):
        sync_text("on:\n  push:\n    branches: [main\n", "ci.yml", MANAGED[CI_WORKFLOW], BRANCHES)


# The command, as a user runs it.


@pytest.fixture
def build_repo(tmp_path: Path) -> Path:
    shutil.copy(REPO_ROOT / "catalog.yaml", tmp_path / "catalog.yaml")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / CI_WORKFLOW).write_text(CI_STALE, encoding="utf-8")
    (workflows / RELEASE_WORKFLOW).write_text(RELEASE_STALE, encoding="utf-8")
    return tmp_path


def test_check_names_each_stale_list_and_writes_nothing(
    build_repo: Path, run_cli: CliRunner
) -> None:
    workflows = build_repo / ".github" / "workflows"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in workflows.iterdir()}
    done = run_cli("sync-workflows", "--check", cwd=build_repo)
    assert done.returncode == 1, done.stderr
    assert (
        ".github/workflows/ci.yml:6: stale on.push.branches: [main, cuda-12_9] -> [main, cuda-12_9, cuda-13_0]"
        in done.stderr
    )
    assert ".github/workflows/ci.yml:11: stale on.pull_request.branches" in done.stderr
    assert (
        ".github/workflows/release.yml:10: stale on.workflow_dispatch.inputs.branch.options"
        in done.stderr
    )
    assert "run `ci-tools sync-workflows`" in done.stderr
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in workflows.iterdir()}
    assert after == before


def test_sync_rewrites_then_check_passes(build_repo: Path, run_cli: CliRunner) -> None:
    workflows = build_repo / ".github" / "workflows"
    done = run_cli("sync-workflows", cwd=build_repo)
    assert done.returncode == 0, done.stderr
    assert "updated on.push.branches" in done.stdout
    assert (workflows / CI_WORKFLOW).read_text(encoding="utf-8") == CI_SYNCED
    assert (workflows / RELEASE_WORKFLOW).read_text(encoding="utf-8") == RELEASE_SYNCED
    assert sorted(p.name for p in workflows.iterdir()) == [CI_WORKFLOW, RELEASE_WORKFLOW]
    again = run_cli("sync-workflows", "--check", cwd=build_repo)
    assert again.returncode == 0, again.stderr
    assert "branch lists match catalog.yaml" in again.stdout


def test_missing_release_workflow_is_skipped(build_repo: Path, run_cli: CliRunner) -> None:
    (build_repo / ".github" / "workflows" / RELEASE_WORKFLOW).unlink()
    done = run_cli("sync-workflows", "--check", cwd=build_repo)
    assert done.returncode == 1
    assert "release.yml" not in done.stderr


def test_no_workflows_is_bad_input(tmp_path: Path, run_cli: CliRunner) -> None:
    shutil.copy(REPO_ROOT / "catalog.yaml", tmp_path / "catalog.yaml")
    done = run_cli("sync-workflows", "--check", cwd=tmp_path)
    assert done.returncode == 2
    assert "pass --workflows DIR" in done.stderr
    assert "Traceback" not in done.stderr


def test_unreadable_workflow_is_bad_input(build_repo: Path, run_cli: CliRunner) -> None:
    (build_repo / ".github" / "workflows" / CI_WORKFLOW).write_text("on: [\n", encoding="utf-8")
    done = run_cli("sync-workflows", cwd=build_repo)
    assert done.returncode == 2
    assert ".github/workflows/ci.yml:2: malformed YAML" in done.stderr
    assert "Traceback" not in done.stderr


def test_shipped_workflows_match_the_shipped_catalog(run_cli: CliRunner) -> None:
    done = run_cli("sync-workflows", "--check")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("linked", [".github/workflows", ".github"])
def test_symlinked_workflows_folder_is_refused(
    build_repo: Path, tmp_path_factory: pytest.TempPathFactory, run_cli: CliRunner, linked: str
) -> None:
    # A checkout whose workflows folder (or .github) is a link to a folder elsewhere: the
    # files there are not rewritten, and the refusal names the path and the fix.
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    moved = elsewhere / "moved"
    shutil.move(str(build_repo / linked), str(moved))
    (build_repo / linked).symlink_to(moved, target_is_directory=True)
    before = {p: p.read_bytes() for p in moved.rglob("*.yml")}
    done = run_cli("sync-workflows", cwd=build_repo)
    assert done.returncode == 2, done.stderr
    assert "through a symbolic link" in done.stderr
    assert "replace the link with a folder" in done.stderr
    assert "Traceback" not in done.stderr
    assert {p: p.read_bytes() for p in moved.rglob("*.yml")} == before
    # --check writes nothing, so reading through the link stays allowed.
    assert run_cli("sync-workflows", "--check", cwd=build_repo).returncode == 1


def test_workflows_folder_named_with_option_may_be_anywhere(
    build_repo: Path, run_cli: CliRunner
) -> None:
    workflows = build_repo / ".github" / "workflows"
    done = run_cli("sync-workflows", "--workflows", str(workflows), cwd=build_repo)
    assert done.returncode == 0, done.stderr
    assert (workflows / CI_WORKFLOW).read_text(encoding="utf-8") == CI_SYNCED
