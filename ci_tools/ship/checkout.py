"""What `flox publish` needs of the checkout and the environment, checked before it runs.

`flox publish` refuses an unlocked environment, a dirty checkout, a detached HEAD or a branch
without upstream, and a commit the remote does not have (publish.rs, providers/publish.rs
`gather_build_repo_meta`): all are checked first, so the message says what to do instead of
failing deep inside flox.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ci_tools.base import proc
from ci_tools.base.errors import InputError

# What creates the lock (flox has no `lock` command): `flox list` locks a path environment and
# writes the lock file when it is missing or stale (cli/flox/src/commands/list.rs calls
# `lockfile()`, CoreEnvironment::ensure_locked).
LOCK_COMMAND = "flox list"
LOCKFILE = Path(".flox") / "env" / "manifest.lock"


def head_commit(cwd: Path) -> str:
    """The commit `flox publish` would publish from."""
    inside = proc.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=cwd, timeout=60)
    if not inside.ok:
        raise InputError(f"{cwd}: not a git checkout; `flox publish` publishes from git")
    head = proc.run(["git", "rev-parse", "--verify", "HEAD"], cwd=cwd, timeout=60)
    if not head.ok:
        raise InputError(f"{cwd}: the git checkout has no commit; `flox publish` needs one")
    return head.stdout.strip()


def check_environment(cwd: Path) -> None:
    """The flox environment must open and be locked (`flox publish`: "Environment must be
    locked."); the lock cannot be made here, so say the one command that makes it."""
    if not (cwd / ".flox" / "env.json").is_file():
        raise InputError(
            f"{cwd}: .flox/env.json is missing: flox cannot open the environment "
            "(commit .flox/env.json, as `flox init` writes it)"
        )
    if not (cwd / LOCKFILE).is_file():
        raise InputError(
            f"{cwd}: {LOCKFILE} is missing: `flox publish` refuses an unlocked environment "
            f'("Environment must be locked."). Run `{LOCK_COMMAND}` in {cwd} (it locks the '
            f"environment and writes {LOCKFILE}), then commit and push {LOCKFILE}"
        )


def check_token(environ: Mapping[str, str]) -> None:
    """In CI nobody ran `flox auth login`: flox (>= 1.14) authenticates from
    FLOX_FLOXHUB_TOKEN, and without it `flox publish` fails with "You are not logged in to
    FloxHub" (cli/flox/src/commands/mod.rs `ensure_auth`). The token itself is never shown."""
    if environ.get("CI") and not environ.get("FLOX_FLOXHUB_TOKEN"):
        raise InputError(
            "FLOX_FLOXHUB_TOKEN is not set: in CI `flox publish` (flox >= 1.14) "
            "authenticates with it; pass the FloxHub token secret to this step's environment"
        )


def check_checkout(cwd: Path) -> None:
    """`flox publish` builds from the committed, pushed state: refuse anything else."""
    head_commit(cwd)
    status = proc.run(["git", "status", "--porcelain"], cwd=cwd, timeout=120)
    if not status.ok:
        raise InputError(f"{cwd}: `git status` failed: {status.stderr.strip()}")
    if status.stdout.strip():
        changed = status.stdout.rstrip().splitlines()
        shown = "\n  ".join(changed[:10]) + ("\n  ..." if len(changed) > 10 else "")
        raise InputError(
            f"{cwd}: the git checkout is not clean; `flox publish` needs every change "
            f"committed (commit or stash these, or add build outputs to .gitignore):\n  {shown}"
        )
    upstream = proc.run(
        ["git", "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"], cwd=cwd, timeout=60
    )
    if not upstream.ok:
        raise InputError(
            f"{cwd}: HEAD is not a branch with an upstream; `flox publish` refuses a detached "
            "HEAD or a branch without upstream (check out the branch, e.g. "
            "`git checkout -B BRANCH COMMIT && git branch --set-upstream-to=origin/BRANCH`)"
        )
    remote = proc.run(["git", "branch", "-r", "--contains", "HEAD"], cwd=cwd, timeout=120)
    if not remote.ok or not remote.stdout.strip():
        raise InputError(
            f"{cwd}: HEAD is not on any remote branch; `flox publish` needs the commit pushed "
            "(git push, then run again)"
        )
