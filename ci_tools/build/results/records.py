"""The result record's types: what build, test and publish record of one variant.

`ResultRecord.passed` is the one rule a release trusts: built and tested without a failed check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

SCHEMA = 1


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    # A build that began and has not ended: written before `flox build` runs, so a record
    # left in this state names what an interrupted job was building. Never a check's status.
    STARTED = "started"


CHECK_STATUSES = (Status.PASSED, Status.FAILED, Status.SKIPPED)


class PublishStatus(StrEnum):
    PUBLISHED = "published"
    FAILED = "failed"
    DRY_RUN = "dry-run"


@dataclass(frozen=True, kw_only=True)
class Check:
    name: str
    status: Status
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class BuildOutcome:
    status: Status
    seconds: float
    store_path: str | None = None
    closure_bytes: int | None = None
    log_tail: str = ""
    attempts: int = 1
    started_at: str | None = None  # UTC, ISO 8601: when the first attempt began


@dataclass(frozen=True, kw_only=True)
class Library:
    name: str  # "libtorch_cuda.so"
    bytes: int


@dataclass(frozen=True, kw_only=True)
class Figures:
    """What the build costs its users: library sizes, the size of the torch package and
    `import torch` wall time."""

    libraries: tuple[Library, ...] = ()
    import_seconds: float | None = None  # the median of `import_runs` fresh interpreters
    import_runs: int = 0
    package_bytes: int | None = None  # every file of site-packages/torch

    @property
    def library_bytes(self) -> int | None:
        return sum(lib.bytes for lib in self.libraries) if self.libraries else None

    @property
    def cuda_library_bytes(self) -> int | None:
        """libtorch_cuda*.so together: the GPU code a targeted build shrinks."""
        cuda = [lib.bytes for lib in self.libraries if lib.name.startswith("libtorch_cuda")]
        return sum(cuda) if cuda else None


@dataclass(frozen=True, kw_only=True)
class Sizes:
    """A record's three sizes: libtorch_cuda*.so (CUDA variants), site-packages/torch, and the
    whole closure; None where the record has no figure."""

    cuda_libraries: int | None
    torch_package: int | None
    closure: int | None


@dataclass(frozen=True, kw_only=True)
class TestOutcome:
    status: Status
    checks: tuple[Check, ...] = ()
    figures: Figures | None = None


@dataclass(frozen=True, kw_only=True)
class PublishOutcome:
    status: PublishStatus
    org: str
    attempts: int = 1
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class ResultRecord:
    variant: str
    package: str
    branch: str
    platform: str
    commit: str | None = None
    runner: str | None = None
    build: BuildOutcome | None = None
    test: TestOutcome | None = None
    publish: PublishOutcome | None = None
    schema: int = field(default=SCHEMA)

    @property
    def passed(self) -> bool:
        """Built and tested without a failed check: the only records a release publishes."""
        return (
            self.build is not None
            and self.build.status is Status.PASSED
            and self.test is not None
            and self.test.status is Status.PASSED
        )

    @property
    def sizes(self) -> Sizes:
        figures = self.test.figures if self.test is not None else None
        return Sizes(
            cuda_libraries=figures.cuda_library_bytes if figures else None,
            torch_package=figures.package_bytes if figures else None,
            closure=self.build.closure_bytes if self.build is not None else None,
        )

    @property
    def published(self) -> bool:
        return self.publish is not None and self.publish.status is PublishStatus.PUBLISHED

    def with_build(self, build: BuildOutcome) -> ResultRecord:
        return replace(self, build=build)

    def with_test(self, test: TestOutcome) -> ResultRecord:
        return replace(self, test=test)

    def with_publish(self, publish: PublishOutcome) -> ResultRecord:
        return replace(self, publish=publish)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema": data.pop("schema"), **data}


def test_status(checks: Iterable[Check]) -> Status:
    """Failed if any check failed; skipped if none ran; else passed."""
    statuses = [c.status for c in checks]
    if Status.FAILED in statuses:
        return Status.FAILED
    if statuses and all(s is Status.SKIPPED for s in statuses):
        return Status.SKIPPED
    return Status.PASSED
