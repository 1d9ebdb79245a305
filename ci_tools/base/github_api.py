"""The PyGithub adapter: client, retries, and the release operations `ci-tools release` needs.

One retry mechanism only: PyGithub is built with `retry=None` and its own throttling off, and
every call goes through `ci_tools.base.retry` (5xx, network errors and rate limits, honouring
Retry-After / x-ratelimit-reset). The policy's total time is one deadline for every call of
an `Api` together (`retry.within`: a hung or trickling server cannot outlast it), answers are
read defensively (`github_answers`: HTML, wrong shapes and nulls fail the call, listings are
read a bounded number of pages). The token is kept out of every message this module raises.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ci_tools.base import github_answers, redact
from ci_tools.base.errors import FailedError, InputError
from ci_tools.base.github_answers import MAX_PAGES, PER_PAGE, checked_release
from ci_tools.base.github_failures import (
    UnreachableError,
    already_exists,
    api_errors,
    describe,
    translate,
)
from ci_tools.base.github_transient import is_dns_failure, is_transient, server_delay
from ci_tools.base.retry import Deadline, DeadlinePassed, RetryPolicy, call, within

if TYPE_CHECKING:
    from github.GitRelease import GitRelease
    from github.GitReleaseAsset import GitReleaseAsset
    from github.Repository import Repository

T = TypeVar("T")

DEFAULT_API_URL = "https://api.github.com"
TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN")
_REPOSITORY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
# How long one HTTP request may hang before it counts as a (transient) failure.
REQUEST_TIMEOUT_SECONDS = 30


@dataclass(frozen=True, kw_only=True)
class Settings:
    token: str = field(repr=False)
    api_url: str
    repository: str

    def redact(self, text: str) -> str:
        """`text` without the token, nor any other secret `redact` knows."""
        return redact.known()(redact.of([self.token])(text))


def settings_from_env(env: Mapping[str, str]) -> Settings:
    token = next((env[v] for v in TOKEN_VARIABLES if env.get(v, "").strip()), "").strip()
    if not token:
        raise InputError(
            "no GitHub token: set GITHUB_TOKEN (in a workflow: ${{ github.token }}) or GH_TOKEN"
        )
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    if not repository:
        raise InputError("GITHUB_REPOSITORY is not set: set it to OWNER/NAME of the repository")
    if not _REPOSITORY.fullmatch(repository) or repository.endswith((".git", "/.", "/..")):
        raise InputError(f'GITHUB_REPOSITORY "{repository}" is not of the form OWNER/NAME')
    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).strip().rstrip("/")
    if not api_url.startswith(("https://", "http://")):
        raise InputError(f'GITHUB_API_URL "{api_url}" is not an http(s) URL')
    return Settings(token=token, api_url=api_url, repository=repository)


@dataclass(frozen=True, kw_only=True)
class Api:
    """One repository, reached with retries; every method is one logical API step."""

    settings: Settings
    repo: Repository | None
    policy: RetryPolicy
    say: Callable[[str], None]
    deadline: Deadline

    @property
    def repository(self) -> Repository:
        if self.repo is None:
            raise AssertionError("Api used before connect() opened the repository")
        return self.repo

    def call(self, what: str, action: Callable[[], T]) -> T:
        try:
            return self.attempt(what, action)
        except api_errors() as exc:
            raise translate(what, exc, self.settings) from None

    def attempt(self, what: str, action: Callable[[], T]) -> T:
        """`action` with retries, within what is left of the deadline; its last exception
        propagates untranslated, but an answer of the wrong shape, or none in time, is a
        FailedError."""

        def on_retry(number: int, exc: BaseException, delay: float) -> None:
            self.say(f"GitHub: {what}: {describe(exc, self.settings)}; retry in {delay:.0f} s")

        budget = f"the {self.deadline.seconds:.0f} s budget for GitHub"
        policy = replace(self.policy, total_seconds=self.deadline.left())
        failed_lookups: list[BaseException] = []

        def transient(exc: BaseException) -> bool:
            # A name that did not resolve is tried once more (a resolver's hiccup), not for
            # the whole budget: without a network it stays unresolved.
            if is_dns_failure(exc):
                failed_lookups.append(exc)
                return len(failed_lookups) <= 1
            return is_transient(exc)

        try:
            return within(
                self.deadline,
                lambda: call(
                    policy,
                    action,
                    transient=transient,
                    server_delay=server_delay,
                    on_retry=on_retry,
                ),
            )
        except DeadlinePassed:
            raise UnreachableError(f"GitHub: {what}: no answer within {budget}") from None
        except github_answers.shape_errors() as exc:
            described = self.settings.redact(github_answers.describe(exc))
            raise FailedError(
                f"GitHub: {what}: the answer is not what GitHub's API returns ({described})"
            ) from None

    def pages(
        self, what: str, listing: Callable[[], Any], read: Callable[[Any], T | None]
    ) -> list[T]:
        """Every entry `read` can read of a listing, at most MAX_PAGES pages of it."""
        found: list[T] = []
        for number in range(MAX_PAGES):
            page = self.call(
                f"{what} (page {number + 1})",
                lambda n=number: github_answers.read_page(listing(), n, read),  # type: ignore[misc]
            )
            found.extend(page.items)
            if not page.full:
                return found
        self.say(f"GitHub: {what}: read the first {MAX_PAGES} pages only")
        return found

    def assets(self, release: GitRelease) -> list[tuple[str, GitReleaseAsset]]:
        """The release's assets with their names (an asset without one is left out)."""

        def read(asset: Any) -> tuple[str, GitReleaseAsset] | None:
            name = github_answers.text_or_none(asset, "name")
            return None if name is None else (name, asset)

        return self.pages("list assets", release.get_assets, read)

    def find_release(self, tag: str) -> GitRelease | None:
        """The release of `tag`, drafts included (the by-tag endpoint never returns a draft)."""
        from github import UnknownObjectException

        def by_tag() -> GitRelease | None:
            try:
                found = self.repository.get_release(tag)
            except UnknownObjectException:
                return None
            return checked_release(found) if found.tag_name == tag else None

        found = self.call(f"look up release {tag}", by_tag)
        if found is not None:
            return found

        def read(release: GitRelease) -> GitRelease | None:
            if github_answers.text_or_none(release, "tag_name") != tag:
                return None
            return checked_release(release)

        listed = self.pages("list releases", self.repository.get_releases, read)
        return listed[0] if listed else None

    def create_release(
        self, *, tag: str, name: str, body: str, commit: str, latest: bool
    ) -> GitRelease:
        """Create the release; if a retried POST finds it already made, update that one.

        `latest` decides whether GitHub shows it as the repository's latest release.
        """

        def create() -> GitRelease:
            made = self.repository.create_git_release(
                tag,
                name=name,
                message=body,
                target_commitish=commit,
                make_latest="true" if latest else "false",
            )
            return checked_release(made)

        what = f"create release {tag}"
        try:
            return self.attempt(what, create)
        except api_errors() as exc:
            if not already_exists(exc):
                raise translate(what, exc, self.settings) from None
        self.say(f"GitHub: release {tag} already exists (an earlier attempt made it); updating")
        existing = self.find_release(tag)
        if existing is None:
            raise FailedError(f"GitHub says release {tag} exists, but it cannot be found")
        return self.update_release(existing, name=name, body=body, commit=commit, latest=latest)

    def update_release(
        self, release: GitRelease, *, name: str, body: str, commit: str, latest: bool = False
    ) -> GitRelease:
        """`latest`: make it the repository's latest release; False leaves that as it is."""
        extra = {"make_latest": "true"} if latest else {}
        # update_release sends draft=False unless told: keep a draft a draft. A null
        # prerelease is GitHub's default, false (checked_release).
        return self.call(
            f"update release {release.tag_name}",
            lambda: checked_release(
                release.update_release(
                    name,
                    body,
                    draft=release.draft,
                    prerelease=release.prerelease is True,
                    target_commitish=commit,
                    **extra,
                )
            ),
        )

    def download(self, asset: GitReleaseAsset, name: str, max_bytes: int) -> bytes:
        """The asset's content: "Get a release asset" with Accept: application/octet-stream
        answers it (200) or a redirect to it (302), which PyGithub follows. Over `max_bytes`
        the call fails (FailedError) instead of reading on."""

        def fetch() -> bytes:
            status, _headers, stream = asset.download_asset(chunk_size=64 * 1024)
            if status != 200:
                raise InputError(f"download of asset {name} answered HTTP {status}")
            chunks, size = [], 0
            for chunk in stream:
                size += len(chunk)
                if size > max_bytes:
                    raise github_answers.ShapeError(f"asset {name} is over {max_bytes} bytes")
                chunks.append(chunk)
            return b"".join(chunks)

        return self.call(f"download asset {name}", fetch)

    def existing_asset(self, release: GitRelease, name: str) -> bool:
        return bool(github_answers.named(self.assets(release), name))

    def asset_bytes(self, release: GitRelease, name: str, max_bytes: int) -> bytes | None:
        """The content of the release's asset `name` (`download`); None when it has none."""
        for asset in github_answers.named(self.assets(release), name)[:1]:
            return self.download(asset, name, max_bytes)
        return None

    def replace_asset(
        self,
        release: GitRelease,
        *,
        name: str,
        data: bytes,
        content_type: str = "application/json",
    ) -> None:
        """Upload `data` as asset `name`, deleting an asset of that name first.

        An upload retried after a 5xx may find its first try landed (422 already_exists):
        then that asset is deleted and the upload made once more.
        """
        for last in (False, True):
            self._delete_assets(release, name)

            def upload() -> None:
                release.upload_asset_from_memory(
                    io.BytesIO(data), len(data), name=name, content_type=content_type
                )

            what = f"upload asset {name}"
            try:
                self.attempt(what, upload)
                return
            except api_errors() as exc:
                if last or not already_exists(exc):
                    raise translate(what, exc, self.settings) from None

    def _delete_assets(self, release: GitRelease, name: str) -> None:
        from github import UnknownObjectException

        for asset in github_answers.named(self.assets(release), name):

            def delete(asset: GitReleaseAsset = asset) -> None:
                # 404: a retried DELETE whose first try went through.
                with contextlib.suppress(UnknownObjectException):
                    asset.delete_asset()

            self.call(f"delete asset {name}", delete)


def connect(settings: Settings, policy: RetryPolicy, say: Callable[[str], None]) -> Api:
    """A client with PyGithub's retry and throttling off, and the repository it works on."""
    from github import Auth, Github

    client = Github(
        auth=Auth.Token(settings.token),
        base_url=settings.api_url,
        timeout=REQUEST_TIMEOUT_SECONDS,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
        per_page=PER_PAGE,
    )
    deadline = Deadline.after(policy.total_seconds, policy.clock)
    api = Api(settings=settings, repo=None, policy=policy, say=say, deadline=deadline)
    repo = api.call(
        f"open repository {settings.repository}", lambda: client.get_repo(settings.repository)
    )
    return replace(api, repo=repo)


def connect_lazy(settings: Settings, policy: RetryPolicy, say: Callable[[str], None]) -> Api:
    """`connect` without its repository request: PyGithub's lazy objects fetch nothing until
    read, so a caller that only lists or creates commit statuses spends one request on each."""
    from github import Auth, Github

    client = Github(
        auth=Auth.Token(settings.token),
        base_url=settings.api_url,
        timeout=REQUEST_TIMEOUT_SECONDS,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
        per_page=PER_PAGE,
        lazy=True,
    )
    return Api(
        settings=settings,
        repo=client.get_repo(settings.repository),
        policy=policy,
        say=say,
        deadline=Deadline.after(policy.total_seconds, policy.clock),
    )
