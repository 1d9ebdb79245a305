"""release.yml's page job builds one site for every branch (issue 28 item 5): each branch's
published variants from its newest release, read with a read-only token passed through env."""

from __future__ import annotations

import re
from typing import Any

from tests.workflows.test_workflows import job as workflow_job


def _page_step() -> dict[str, Any]:
    job = workflow_job("release.yml", "page")
    step: dict[str, Any] = next(s for s in job["steps"] if "ci-tools page" in s.get("run", ""))
    return step


def test_the_page_reads_every_branchs_newest_release() -> None:
    step = _page_step()
    assert re.search(r"args=\(.*--from-releases", step["run"])
    assert 'ci-tools page "${args[@]}"' in step["run"]


def test_the_token_reaches_the_page_through_env_and_reads_only() -> None:
    job = workflow_job("release.yml", "page")
    step = _page_step()
    assert step["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    assert "github.token" not in step["run"] and "secrets." not in step["run"]
    # "List releases" and "Get a release asset" need the "Contents" permission (read) only.
    assert job["permissions"] == {"contents": "read"}
    assert "environment" not in job  # no reviewer is asked, no environment secret reaches it
