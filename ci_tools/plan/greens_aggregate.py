"""Greens in aggregate (issue 28 item 4): every stack one run proved, in one check run.

A push of 1,100 stacks with one commit status per stack needs 1,100 writes, over what GitHub
allows: GITHUB_TOKEN makes at most 1,000 requests an hour per repository, and any token at
most 80 content-creating requests a minute and 500 an hour ("Rate limits for the REST API",
primary and secondary limits); buildbot-nix hit the secondary limit with a status per
attribute (nix-community/buildbot-nix#178). So each stack's mark-green job (after its own
test) only writes its verdict into the run's artifacts (`green-<stack>`), which costs no REST
request, and one job at the end of the run (also of a cancelled run) publishes them here:
one check run per `PER_CHECK_RUN` greens, named `CHECK_NAME`, on the built commit.

The record: conclusion `success`; `output.text` one line per green stack, the first
`DIGEST_CHARS` hex digits of sha256("<stack> <fingerprint>"), so that a line is short and of
one size whatever the names; `output.summary` says how many. GitHub takes at most 65,535
characters in each ("Create a check run": output.summary and output.text, "Maximum length:
65535 characters"): 1,985 lines of 33 characters a check run.

A stack whose legs passed but whose records prove nothing this fleet can check (issue 28
item 6: its checks need hardware no runner has) is recorded beside the greens as
unprovable: a line of the same form for "<stack> <fingerprint> unprovable <inventory>",
where <inventory> is the sha256 of runners.yaml's bytes (`inventory_digest`). The plan
builds it again only when its inputs or the inventory change.

Reading: "List check runs for a Git reference" filtered by `check_name`, one
request a commit (100 check runs a page: a run writes one). Only check runs of the GitHub
Actions app count (what GITHUB_TOKEN creates as; app slug `github-actions`): anyone else may
create check runs, and a forged green would skip a build.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ci_tools.base.github_api import Api

CHECK_NAME = "ci-tools/greens"
DIGEST_CHARS = 32
TEXT_LIMIT = 65_535
PER_CHECK_RUN = TEXT_LIMIT // (DIGEST_CHARS + 1)
TRUSTED_APP = "github-actions"
INVENTORY_MAX_BYTES = 4 << 20


def digest(stack: str, fingerprint: str) -> str:
    return hashlib.sha256(f"{stack} {fingerprint}".encode()).hexdigest()[:DIGEST_CHARS]


def unprovable_digest(stack: str, fingerprint: str, inventory: str) -> str:
    return digest(stack, f"{fingerprint} unprovable {inventory}")


def inventory_digest(path: Path) -> str:
    """sha256 of the inventory file's bytes; "none" where there is none (the defaults)."""
    from ci_tools.base import bounded

    try:
        return hashlib.sha256(bounded.read_bytes(path, INVENTORY_MAX_BYTES)).hexdigest()
    except FileNotFoundError:
        return "none"


def texts(greens: Mapping[str, str], unprovable: Sequence[str] = ()) -> list[str]:
    """The `output.text` of each check run for `greens` (stack -> fingerprint) and the
    `unprovable` lines (`unprovable_digest`), in order."""
    lines = sorted([*(digest(stack, fp) for stack, fp in greens.items()), *unprovable])
    return [
        "".join(line + "\n" for line in lines[start : start + PER_CHECK_RUN])
        for start in range(0, len(lines), PER_CHECK_RUN)
    ]


def publish(
    api: Api,
    *,
    commit: str,
    greens: Mapping[str, str],
    target_url: str | None,
    unprovable: Sequence[str] = (),
) -> list[str]:
    """Create the check runs recording `greens` on `commit`; why each that GitHub did not
    take was not (empty: all recorded). Each request is retried within the Api's policy."""
    from github import GithubException
    from requests import RequestException

    from ci_tools.base.errors import FailedError
    from ci_tools.base.github_failures import translate

    refused: list[str] = []
    parts = texts(greens, unprovable)
    kwargs: dict[str, Any] = {"details_url": target_url} if target_url else {}
    for index, text in enumerate(parts):
        count = text.count("\n")
        what = f"create check run {CHECK_NAME!r} ({index + 1} of {len(parts)}) on {commit[:12]}"
        output: dict[str, Any] = {
            "title": f"{count} stacks green",
            "summary": _summary(count, len(greens)),
            "text": text,
        }

        def create(output: dict[str, Any] = output) -> Any:
            return api.repository.create_check_run(
                CHECK_NAME,
                commit,
                status="completed",
                conclusion="success",
                output=output,
                **kwargs,
            )

        try:
            api.attempt(what, create)
        except FailedError as exc:
            refused.append(str(exc))
        except (GithubException, RequestException) as exc:
            refused.append(str(translate(what, exc, api.settings)))
    return refused


def _summary(count: int, total: int) -> str:
    return (
        f"{count} of the {total} stacks this run proved, one line each in the text: the "
        f"first {DIGEST_CHARS} hex digits of sha256 of `<stack> <input fingerprint>` "
        "(read by `ci-tools matrix --until-green`)."
    )


def read_record(check_run: Any) -> tuple[str, frozenset[str]] | None:
    """(the creating app's slug, the digests) of a completed, successful check run of ours;
    None for any other."""
    # Imported here: the workflow's plan (--github-output) reads only `inventory_digest`.
    from ci_tools.base.github_answers import text_or_none

    if text_or_none(check_run, "name") != CHECK_NAME:
        return None
    if text_or_none(check_run, "conclusion") != "success":
        return None
    app = text_or_none(getattr(check_run, "app", None), "slug") or "(unknown)"
    text = text_or_none(getattr(check_run, "output", None), "text") or ""
    lines = frozenset(
        line for line in text.splitlines() if len(line) == DIGEST_CHARS and _hex(line)
    )
    return app, lines


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def green_of(
    records: Sequence[tuple[str, frozenset[str]]],
    wanted: Mapping[str, str],
    inventory: str | None = None,
) -> tuple[frozenset[str], frozenset[str], int]:
    """Which of `wanted` (stack -> fingerprint) a trusted record holds green, which as
    unprovable with `inventory` (None: none counts), and how many records were not
    trusted."""
    trusted = frozenset().union(*(d for app, d in records if app == TRUSTED_APP))
    untrusted = sum(1 for app, _ in records if app != TRUSTED_APP)
    found = frozenset(stack for stack, fp in wanted.items() if digest(stack, fp) in trusted)
    unprovable = frozenset(
        stack
        for stack, fp in wanted.items()
        if inventory is not None
        and stack not in found
        and unprovable_digest(stack, fp, inventory) in trusted
    )
    return found, unprovable, untrusted
