"""What a failed GitHub API call means: PyGithub's and requests' exceptions read as ci-tools
errors (bad setup exit 2, else exit 1; GitHub unreachable its own kind), the token never in a
message. Split from `github_api` (the client and its operations), which raises these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.github_transient import is_transient

if TYPE_CHECKING:
    from ci_tools.base.github_api import Settings


class UnreachableError(FailedError):
    """GitHub could not be reached at all (no name resolution, no connection, no answer in
    time): a dry run can still preview what it would write."""


def api_errors() -> tuple[type[Exception], ...]:
    """What a failed API call raises: answers from GitHub, and network trouble."""
    from github import GithubException
    from requests import RequestException

    return (GithubException, RequestException)


def already_exists(exc: BaseException) -> bool:
    from github import GithubException

    if not isinstance(exc, GithubException) or exc.status != 422:
        return False
    data = exc.data if isinstance(exc.data, dict) else {}
    errors = data.get("errors") or []
    return any(isinstance(e, dict) and e.get("code") == "already_exists" for e in errors)


def describe(exc: BaseException, settings: Settings) -> str:
    from github import GithubException

    if isinstance(exc, GithubException):
        message = exc.message or (exc.data.get("message") if isinstance(exc.data, dict) else "")
        text = f"HTTP {exc.status}" + (f" {message}" if message else "")
    else:
        text = f"{type(exc).__name__}: {exc}"
    return settings.redact(text)


def translate(what: str, exc: Exception, settings: Settings) -> Exception:
    """A PyGithub/requests failure as a ci-tools error: bad setup exit 2, else exit 1."""
    from github import BadCredentialsException, GithubException, UnknownObjectException

    described = describe(exc, settings)
    if isinstance(exc, BadCredentialsException) or (
        isinstance(exc, GithubException) and exc.status == 401
    ):
        return InputError(
            f"GitHub rejected the token ({described}) at {settings.api_url}: check GITHUB_TOKEN "
            "/ GH_TOKEN and GITHUB_API_URL"
        )
    if isinstance(exc, UnknownObjectException) and what.startswith("open repository"):
        return InputError(
            f"repository {settings.repository} not found at {settings.api_url} ({described}): "
            "check GITHUB_REPOSITORY, and that the token can read it"
        )
    if isinstance(exc, GithubException) and exc.status == 403 and not is_transient(exc):
        return InputError(
            f"GitHub refused to {what} ({described}): the token needs `contents: write` "
            "on this repository"
        )
    if _no_connection(exc):
        return UnreachableError(f"GitHub: {what}: cannot reach {settings.api_url}: {described}")
    return FailedError(f"GitHub: {what} failed: {described}")


def _no_connection(exc: BaseException) -> bool:
    from requests import ConnectionError as RequestsConnectionError
    from requests import Timeout

    return isinstance(exc, RequestsConnectionError | Timeout)
