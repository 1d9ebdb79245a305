"""Before any build of a release: could it publish? (`ci-tools release --preflight`)

A release that cannot publish finds out after hours of builds, at `flox publish`. The plan
job asks first, in seconds, and a non-dry release stops there naming every missing piece:
* `.flox/env/manifest.lock` committed at the planned commit: `flox publish` refuses an
  unlocked environment ("Environment must be locked.", flox cli/flox/src/commands/publish.rs)
  and will not lock it itself, since locking would leave the checkout dirty; a valid lock
  of the manifest's catalog packages needs flox's catalog service (each locked package holds
  the catalog's derivation and store paths: flox-manifest src/lockfile/catalog.rs,
  LockedPackageCatalog), so ci-tools cannot write one: a maintainer runs flox once;
* FLOX_FLOXHUB_TOKEN in the environment: the plan job of a non-dry release runs in the
  `release` environment, whose secret it is (a job sees an environment's secrets only when
  it names the environment);
* the `release` environment itself, read through the REST API ("Get an environment": 404
  when there is none; GITHUB_TOKEN needs `actions: read`). GitHub creates an environment a
  job names that does not exist, without reviewers or secrets ("Managing environments for
  deployment"): one without protection rules is reported, since then nobody reviews a release.
A dry run publishes nothing and needs none of them: it only says what it found.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools.catalog import layout

if TYPE_CHECKING:
    from ci_tools.base.github_api import Api

TOKEN_VARIABLE = "FLOX_FLOXHUB_TOKEN"  # noqa: S105  a variable's name, not a secret
DEFAULT_ENVIRONMENT = "release"


@dataclass(frozen=True, kw_only=True)
class Environment:
    """What GitHub says of the release's environment."""

    exists: bool
    rules: tuple[str, ...] = ()  # protection rule types: required_reviewers, wait_timer, ...


@dataclass(frozen=True, kw_only=True)
class Findings:
    problems: tuple[str, ...]  # each stops a non-dry release
    notes: tuple[str, ...]  # worth saying, stop nothing


def lock_problem(root: Path) -> str | None:
    """Why the committed lock will not do; None when HEAD has a flox lockfile."""
    from ci_tools.base.gitrepo import GitRepo

    git = GitRepo(root=root)
    if layout.MANIFEST_LOCK not in git.list_files("HEAD", str(Path(layout.MANIFEST_LOCK).parent)):
        return (
            f"{layout.MANIFEST_LOCK} is not committed: `flox publish` refuses an unlocked "
            "environment, and a lock needs flox's catalog service. Run `flox activate` (or "
            f"`flox install` of nothing new) once where flox and the network are, then commit "
            f"{layout.MANIFEST_LOCK}"
        )
    text = git.show("HEAD", layout.MANIFEST_LOCK) or ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or "lockfile-version" not in data or "manifest" not in data:
        return (
            f"{layout.MANIFEST_LOCK} at HEAD is not a flox lockfile (a JSON object with "
            "lockfile-version and manifest): lock the environment again with flox and commit it"
        )
    return None


def environment(api: Api, name: str) -> Environment:
    """The environment `name` as GitHub has it (one request, retried)."""
    from github import GithubException, UnknownObjectException
    from requests import RequestException

    from ci_tools.base.errors import InputError
    from ci_tools.base.github_failures import translate
    from ci_tools.base.github_transient import is_transient

    def lookup() -> Environment:
        try:
            rules = api.repository.get_environment(name).protection_rules
        except UnknownObjectException:
            return Environment(exists=False)
        return Environment(exists=True, rules=tuple(str(r.type) for r in rules))

    what = f"look up environment {name}"
    try:
        return api.attempt(what, lookup)
    except (GithubException, RequestException) as exc:
        if isinstance(exc, GithubException) and exc.status == 403 and not is_transient(exc):
            raise InputError(
                f"GitHub refused to {what} (HTTP 403): the job needs `permissions: actions: "
                "read` to read the repository's environments"
            ) from None
        raise translate(what, exc, api.settings) from None


def findings(
    *,
    dry_run: bool,
    lock: str | None,
    env: Mapping[str, str],
    name: str,
    found: Environment | None,
) -> Findings:
    """The verdict, from what was found (`found` None: not asked)."""
    problems: list[str] = []
    notes: list[str] = []
    if lock is not None:
        problems.append(lock)
    if not dry_run and not env.get(TOKEN_VARIABLE, "").strip():
        problems.append(
            f"{TOKEN_VARIABLE} is not set: give the `{name}` environment the secret "
            f"{TOKEN_VARIABLE} (a FloxHub token of the org), and run this job in it"
        )
    if found is not None and not found.exists:
        problems.append(
            f"the environment `{name}` does not exist: create it (Settings > Environments) with "
            f"required reviewers, the catalog branches as deployment branches, and the secret "
            f"{TOKEN_VARIABLE}"
        )
    elif found is not None and "required_reviewers" not in found.rules:
        notes.append(
            f"the environment `{name}` has no required reviewers: a release publishes without "
            "anyone's approval (GitHub creates an environment a job names, unprotected)"
        )
    if dry_run:
        return Findings(
            problems=(),
            notes=tuple(
                notes
                + [f"a dry run publishes nothing; a real one would stop: {p}" for p in problems]
            ),
        )
    return Findings(problems=tuple(problems), notes=tuple(notes))
