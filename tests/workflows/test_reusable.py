"""Issue 30 item 1: the workflows are reusable workflows another repository calls by path and
pinned ref, and each installs ci-tools as the package its `ci-tools` input pins, never from
the caller's checkout (a build repository has no ci-tools source)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.workflows.test_workflows import WORKFLOWS, load, workflow_files

CALLERS = ("ci.yml", "release.yml")
# What this repository's callers install: the package at the commit the run is about, from
# this repository, as an adopter's names a commit of ci-tools' (docs/adoption.md).
OWN = "ci-tools @ git+https://github.com/${{ github.repository }}@${{ github.sha }}"
SHA = "0123456789abcdef0123456789abcdef01234567"


def reusable() -> list[Path]:
    return [p for p in workflow_files() if "workflow_call" in (load(p).get("on") or {})]


def install_steps() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path.name, job_id, step)
        for path in workflow_files()
        for job_id, job in load(path)["jobs"].items()
        for step in job.get("steps", [])
        if step.get("name") == "Install ci-tools"
    ]


def test_the_callers_call_and_the_rest_are_called() -> None:
    assert {p.name for p in reusable()} == {p.name for p in workflow_files()} - set(CALLERS)
    assert len(reusable()) >= 8


@pytest.mark.parametrize("path", reusable(), ids=lambda p: p.name)
def test_a_reusable_workflow_calls_no_other_by_a_local_path(path: Path) -> None:
    """Called from another repository, `./.github/workflows/X.yml` inside it would name the
    caller's repository, which has no such file (a startup failure), and a commit cannot name
    its own SHA: so only the callers hold the job graph."""
    for job_id, job in load(path)["jobs"].items():
        assert "uses" not in job, f"{path.name} jobs.{job_id} calls {job['uses']}"


@pytest.mark.parametrize("path", reusable(), ids=lambda p: p.name)
def test_every_reusable_workflow_takes_the_version_to_install(path: Path) -> None:
    spec = load(path)["on"]["workflow_call"]["inputs"]["ci-tools"]
    assert spec["required"] is True and spec["type"] == "string"
    assert any(where == path.name for where, _, _ in install_steps()), path.name


@pytest.mark.parametrize("name", CALLERS)
def test_every_call_passes_the_package_at_the_runs_commit(name: str) -> None:
    calls = {j: job for j, job in load(WORKFLOWS / name)["jobs"].items() if "uses" in job}
    assert calls
    for job_id, job in calls.items():
        assert job["with"]["ci-tools"] == OWN, f"{name} jobs.{job_id}"


def test_nothing_is_installed_from_the_checkout() -> None:
    steps = install_steps()
    assert len(steps) >= 10
    for where, job_id, step in steps:
        assert step["env"] == {"CI_TOOLS": "${{ inputs.ci-tools }}"}, (where, job_id)
        assert re.search(r'-m pip install --quiet "\$CI_TOOLS"$', step["run"], re.MULTILINE), where
    for path in workflow_files():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"pip install[^\n]* \.($|\s|\[)", text, re.MULTILINE), path.name
        assert ".github/scripts" not in text, path.name
    assert not (WORKFLOWS.parent / "scripts").exists()


def test_every_install_step_validates_the_input_alike() -> None:
    """One check, copied into each workflow (a composite action would be resolved against
    the caller's repository, as a local reusable workflow is): the copies cannot drift."""
    checks = {validation(step["run"]) for _, _, step in install_steps()}
    assert len(checks) == 1, checks


def validation(script: str) -> str:
    return script[: script.index("\nfi\n") + 4]


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("ci-tools==1.2.3", True),
        ("ci-tools==0.4.0rc1", True),
        (f"ci-tools @ git+https://github.com/acme/ci-tools@{SHA}", True),
        ("ci-tools", False),  # whatever the index has today
        ("ci-tools>=1.2", False),
        (f"ci-tools @ git+https://github.com/acme/ci-tools@{SHA[:12]}", False),  # a short SHA
        ("ci-tools @ git+https://github.com/acme/ci-tools@main", False),  # a branch moves
        (f"ci-tools @ git+https://evil.example/acme/ci-tools@{SHA}", False),
        (f"ci-tools @ git+https://github.com/acme/ci-tools@{SHA} ; --index-url=x", False),
        (".", False),
        (f"ci-tools==1.2.3\nci-tools @ git+https://github.com/a/b@{SHA}", False),
        ("", False),
    ],
)
def test_the_input_must_pin_one_version(tmp_path: Path, value: str, accepted: bool) -> None:
    """The real check, run by bash with the input in the environment as GitHub passes it."""
    bash = shutil.which("bash")
    assert bash is not None
    (_, _, step) = install_steps()[0]
    script = tmp_path / "check.sh"
    script.write_text(validation(step["run"]) + 'echo "install $CI_TOOLS"\n', encoding="utf-8")
    done = subprocess.run(
        [bash, "-e", str(script)],
        env={"CI_TOOLS": value, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    if accepted:
        assert done.returncode == 0 and done.stdout == f"install {value}\n", done
    else:
        assert done.returncode == 2, done
        assert "::error::the input ci-tools must pin one version" in done.stdout
        assert "install " not in done.stdout


def test_the_runners_preflight_is_the_packages_command() -> None:
    text = (WORKFLOWS / "build-stack.yml").read_text(encoding="utf-8")
    assert text.count("run: ci-tools preflight --inventory runners.yaml") == 2
