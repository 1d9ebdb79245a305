"""The git checks of `flox build` (expression builds) and `flox publish`, through the real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from flox_double.errors import FloxError


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


def toplevel(directory: Path) -> Path | None:
    done = _git(directory, "rev-parse", "--show-toplevel")
    return Path(done.stdout.strip()) if done.returncode == 0 else None


def require_tracked(parent: Path, names_and_files: list[tuple[str, Path]]) -> Path:
    """commands/build.rs `check_git_tracking_for_expression_builds`: expression builds need git,
    and each expression must be tracked (the build reads a git+file reference). Returns the
    repository root."""
    root = toplevel(parent)
    listing = "\n".join(f"  - {name}" for name, _ in names_and_files)
    if root is None:
        raise FloxError(
            "Building nix expression build(s) requires git version control.\n"
            "Only git tracked files (including the expressions themselves) will be available "
            f"during nix expression builds.\n\nExpression build(s):\n{listing}"
        )
    for name, file in names_and_files:
        if _git(root, "ls-files", "--error-unmatch", str(file)).returncode != 0:
            raise FloxError(
                f"The Nix expression for '{name}' does not appear to be tracked by git.\n"
                "Only git tracked files (including the expressions themselves) will be "
                "available during nix expression builds.\n\n"
                f"Nix expression: '{name}' defined in '{file}'"
            )
    return root


def tracked_files(root: Path) -> list[str]:
    done = _git(root, "ls-files", "-z")
    return [name for name in done.stdout.split("\0") if name]


def publish_metadata(root: Path, dot_flox: Path) -> str:
    """providers/publish.rs `check_env_files_tracked` and `gather_build_repo_meta`, in flox's
    order; returns the revision flox records as the package's source."""
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--", str(dot_flox))
    if untracked.stdout.strip():
        listing = "\n".join(f"- {path}" for path in untracked.stdout.split())
        raise _state(f"The following environment files are not tracked by git:\n{listing}")
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    if status.returncode != 0:
        raise _state("Unable to get repository status.")
    if status.stdout.strip():
        raise _state("Build repository must be clean, but has dirty tracked files.")
    rev = _git(root, "rev-parse", "HEAD").stdout.strip()
    upstream = _git(root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}")
    if upstream.returncode != 0:
        branch = _git(root, "symbolic-ref", "-q", "--short", "HEAD")
        remotes = _git(root, "remote").stdout.split()
        hint = remotes[0] if len(remotes) == 1 else "<remote>"
        if branch.returncode == 0:
            name = branch.stdout.strip()
            raise _state(
                f"Current branch '{name}' has no upstream remote configured.\n"
                f"Set one with 'git branch --set-upstream-to={hint}/{name}'"
            )
        raise _state(
            "Repository is in detached HEAD state and has no upstream remote configured.\n"
            "Check out a branch before publishing: git checkout -b <branch-name>"
        )
    remote, _, remote_branch = upstream.stdout.strip().partition("/")
    # providers/git.rs `rev_exists_on_remote`: ask the remote itself which of our revisions it
    # has in common with us; a local remote-tracking ref is not trusted.
    negotiated = _git(root, "fetch", "--negotiate-only", f"--negotiation-tip={rev}", remote)
    if negotiated.returncode != 0:
        raise _state(
            f"Failed to check whether local revision exists on remote "
            f"'{remote}/{remote_branch}': {negotiated.stderr.strip()}"
        )
    # flox compares the whole trimmed output with the revision; a local bare remote (file://)
    # acknowledges every common commit in no fixed order, so the double looks for the revision
    # among the lines.
    if rev not in negotiated.stdout.split():
        raise _state(
            f"Local revision is not present on remote '{remote}/{remote_branch}'.\n"
            "Push your commits with 'git push'"
        )
    return rev


def _state(message: str) -> FloxError:
    # providers/publish.rs:71 PublishError::UnsupportedEnvironmentState's Display
    return FloxError(f"The environment is in an unsupported state for publishing: {message}")
