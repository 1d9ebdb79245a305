"""Fixtures of rebuild-until-green (`tests.greens`): `repo`, a build repository in git as the
current directory, and `github`, the GitHub API double it talks to. A test module's own
fixture of the same name wins."""

from tests.greens import github, repo

__all__ = ["github", "repo"]
