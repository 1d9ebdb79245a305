"""The result record's types: what build, test and publish record of one variant.

What a record must show before its variant may be published is the publish policy's
(`ci_tools/build/policy.py`), which reads the checks themselves, never `test.status` alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

SCHEMA = 2
# Schema 1 (before checks could be `static` and builds record the binary cache) is a subset of
# 2: an earlier run's records, in a release's results asset, stay readable.
READABLE_SCHEMAS = (1, 2)


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    # A check proven without running the build's code (cuobjdump's SASS listing, objdump's
    # instructions); a test none of whose checks ran on hardware, but whose proofs held.
    STATIC = "static"
    # A build that began and has not ended: written before `flox build` runs, so a record
    # left in this state names what an interrupted job was building. Never a check's status.
    STARTED = "started"


CHECK_STATUSES = (Status.PASSED, Status.FAILED, Status.SKIPPED, Status.STATIC)


class CacheStatus(StrEnum):
    PUSHED = "pushed"
    NOT_PUSHED = "not-pushed"


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
class CacheOutcome:
    """Whether the build's closure reached the fleet's binary cache (runners.yaml `cache`),
    from which test and publish legs on other runners substitute it."""

    status: CacheStatus
    url: str
    detail: str = ""
    attempts: int = 1


@dataclass(frozen=True, kw_only=True)
class Output:
    """One output of the build as the store holds it (`nix path-info --json`): the bytes
    the test leg tests and publish uploads are the ones with this NAR hash."""

    store_path: str
    nar_hash: str  # SRI, sha256-<base64> (ci_tools/base/narinfo.py reads every form Nix prints)
    nar_size: int


@dataclass(frozen=True, kw_only=True)
class BuildOutcome:
    status: Status
    seconds: float
    store_path: str | None = None
    closure_bytes: int | None = None
    log_tail: str = ""
    attempts: int = 1
    started_at: str | None = None  # UTC, ISO 8601: when the first attempt began
    cache: CacheOutcome | None = None  # None: no cache configured, or not pushed yet
    outputs: tuple[Output, ...] = ()  # empty: an older record, or Nix could not tell

    def output(self, store_path: str) -> Output | None:
        return next((o for o in self.outputs if o.store_path == store_path), None)


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
class Route:
    """Where the fleet can test the variant (ci-tools matrix's routing, runners.yaml): `gpu`
    a runner with its SM and ISA, `cpu` a runner with its ISA, `static` none (static proofs
    only), `none` nobody can tell; with the reason for anything less than `gpu`."""

    scope: str
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class TestOutcome:
    status: Status
    checks: tuple[Check, ...] = ()
    figures: Figures | None = None
    runner: str | None = None  # the runner the checks ran on (the test leg's, not the build's)
    route: Route | None = None


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
    def built(self) -> bool:
        return self.build is not None and self.build.status is Status.PASSED

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
    """Failed if any check failed; passed if one ran on hardware; static if none ran but a
    static proof held; skipped otherwise, no checks at all included."""
    statuses = {c.status for c in checks}
    for status in (Status.FAILED, Status.PASSED, Status.STATIC):
        if status in statuses:
            return status
    return Status.SKIPPED
