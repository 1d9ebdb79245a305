"""What the workflow run's event says: the pull request's head commit, and whether the run's
GITHUB_TOKEN can write at all.

GitHub writes the event payload to the file GITHUB_EVENT_PATH names ("Default environment
variables"; the payload of each event: "Webhook events and payloads"). Read defensively: a
missing, unreadable, huge or malformed file is no event, never a crash; a path to something
other than a regular file (a FIFO, whose read would wait forever, a device, a folder) is bad
input, exit 2.

When the token is read-only (GitHub docs, "Automatic token authentication": "pull requests
from public forks ... read access only"; "Automating Dependabot with GitHub Actions": for
workflows initiated by Dependabot (`github.actor == 'dependabot[bot]'`) on pull_request,
push and the other listed events, "GITHUB_TOKEN has read-only permissions by default"), a
write would only be refused with 403: callers skip it and say why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_tools.base import bounded
from ci_tools.base.errors import InputError

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_review", "pull_request_review_comment")
DEPENDABOT = "dependabot[bot]"
# The events whose runs Dependabot's restrictions cover (GitHub's list, above).
_DEPENDABOT_READ_ONLY = (*PULL_REQUEST_EVENTS, "push", "create", "deployment", "deployment_status")
_MAX_EVENT_BYTES = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
_SHA = re.compile(r"[0-9a-f]{40}")


def payload(env: Mapping[str, str]) -> dict[str, Any]:
    """The event payload; {} when there is none or it cannot be read as a JSON object."""
    path = env.get("GITHUB_EVENT_PATH", "").strip()
    if not path:
        return {}
    try:
        data = json.loads(bounded.read_bytes(Path(path), _MAX_EVENT_BYTES))
    except bounded.TooLarge:
        return {}
    except bounded.RefusedInput as exc:
        raise InputError(
            f"GITHUB_EVENT_PATH={path}: {exc}; it must name the event payload file GitHub "
            "writes (unset it outside a workflow run)"
        ) from None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _field(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def pull_request_head(env: Mapping[str, str]) -> str | None:
    """The pull request's head commit (`pull_request.head.sha`) on a pull request event;
    None elsewhere. The run itself checks out GitHub's merge commit, which no later run
    reaches: a record meant to last belongs on the head commit."""
    if env.get("GITHUB_EVENT_NAME", "") not in (*PULL_REQUEST_EVENTS, "pull_request_target"):
        return None
    head = _field(payload(env), "pull_request", "head", "sha")
    return head if isinstance(head, str) and _SHA.fullmatch(head) else None


def read_only_reason(env: Mapping[str, str]) -> str | None:
    """Why this run's GITHUB_TOKEN cannot write; None when nothing says so."""
    event = env.get("GITHUB_EVENT_NAME", "")
    if env.get("GITHUB_ACTOR", "") == DEPENDABOT and event in _DEPENDABOT_READ_ONLY:
        return (
            f"a run Dependabot started ({event}): its GITHUB_TOKEN is read-only (GitHub docs, "
            '"Automating Dependabot with GitHub Actions")'
        )
    if event in PULL_REQUEST_EVENTS:
        data = payload(env)
        head_repo = _field(data, "pull_request", "head", "repo", "full_name")
        repository = env.get("GITHUB_REPOSITORY", "")
        if isinstance(head_repo, str) and repository and head_repo != repository:
            return (
                f"a pull request from the fork {head_repo}: its GITHUB_TOKEN is read-only "
                '(GitHub docs, "Automatic token authentication")'
            )
    return None
