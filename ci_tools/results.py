"""The result record: one versioned JSON file per variant, written by build, test and publish.

    {"schema": 1, "variant": ..., "package": ..., "branch": ..., "commit": ..., "runner": ...,
     "platform": ..., "build": {...} | null, "test": {...} | null, "publish": {...} | null}

The release trusts nothing else: a variant is published only when its record says its build
and its test passed. Readers refuse a schema they do not know (exit 2) rather than guess.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from ci_tools.errors import InputError
from ci_tools.fsutil import atomic_write_text

SCHEMA = 1
RESULT_SUFFIX = ".result.json"


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


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


@dataclass(frozen=True, kw_only=True)
class TestOutcome:
    status: Status
    checks: tuple[Check, ...] = ()


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


def result_path(directory: Path, variant: str) -> Path:
    return directory / f"{variant}{RESULT_SUFFIX}"


def save(record: ResultRecord, path: Path) -> None:
    atomic_write_text(path, json.dumps(record.to_json(), indent=2, sort_keys=False) + "\n")


def load(path: Path) -> ResultRecord:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such result file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable result record: {exc}") from None
    return from_json(data, str(path))


def load_dir(directory: Path) -> list[ResultRecord]:
    """Every result record under `directory` (artifact downloads nest one folder deep)."""
    if not directory.is_dir():
        raise InputError(f"{directory}: no such results folder")
    paths = sorted(directory.rglob(f"*{RESULT_SUFFIX}"))
    if not paths:
        raise InputError(
            f"{directory}: holds no result records (*{RESULT_SUFFIX}); "
            "run `ci-tools build` / `ci-tools test` with --result-json first"
        )
    return [load(p) for p in paths]


def from_json(data: object, source: str) -> ResultRecord:
    if not isinstance(data, dict):
        raise InputError(f"{source}: a result record must be a JSON object")
    schema = data.get("schema")
    if schema != SCHEMA:
        raise InputError(
            f"{source}: result schema {schema!r} is not supported (this ci-tools reads schema "
            f"{SCHEMA}); rebuild the record with this version of ci-tools"
        )
    try:
        return ResultRecord(
            variant=_str(data, "variant"),
            package=_str(data, "package"),
            branch=_str(data, "branch"),
            platform=_str(data, "platform"),
            commit=data.get("commit"),
            runner=data.get("runner"),
            build=_build(data.get("build")),
            test=_test(data.get("test")),
            publish=_publish(data.get("publish")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{source}: malformed result record: {exc}") from None


def _str(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise TypeError(f'"{key}" must be a string')
    return value


def _build(data: Any) -> BuildOutcome | None:
    if data is None:
        return None
    return BuildOutcome(
        status=Status(data["status"]),
        seconds=float(data["seconds"]),
        store_path=data.get("store_path"),
        closure_bytes=data.get("closure_bytes"),
        log_tail=str(data.get("log_tail", "")),
        attempts=int(data.get("attempts", 1)),
    )


def _test(data: Any) -> TestOutcome | None:
    if data is None:
        return None
    checks = tuple(
        Check(name=str(c["name"]), status=Status(c["status"]), detail=str(c.get("detail", "")))
        for c in data.get("checks", [])
    )
    return TestOutcome(status=Status(data["status"]), checks=checks)


def _publish(data: Any) -> PublishOutcome | None:
    if data is None:
        return None
    return PublishOutcome(
        status=PublishStatus(data["status"]),
        org=str(data["org"]),
        attempts=int(data.get("attempts", 1)),
        detail=str(data.get("detail", "")),
    )
