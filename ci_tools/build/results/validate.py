"""The schema check of a result record's JSON: every field, its type and its grammar.

`from_json` refuses a schema it does not know, and names the first field that is wrong as a
dotted path (`test.checks[0].status`), so the caller's InputError says file and field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from ci_tools.base import digits
from ci_tools.base.errors import InputError
from ci_tools.build.results.records import (
    CHECK_STATUSES,
    READABLE_SCHEMAS,
    SCHEMA,
    BuildOutcome,
    CacheOutcome,
    CacheStatus,
    Check,
    Figures,
    Library,
    Output,
    PublishOutcome,
    PublishStatus,
    ResultRecord,
    Route,
    Status,
    TestOutcome,
)

BUILD_STATUSES = (Status.PASSED, Status.FAILED, Status.SKIPPED, Status.STARTED)
ROUTE_SCOPES = ("gpu", "cpu", "static", "none")


class _Bad(Exception):
    """One field of a record is wrong: where (a dotted path) and why."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
_NAR_HASH = re.compile(r"sha256-[A-Za-z0-9+/]{43}=")
# The store folder is the runner's (NIX_STORE_DIR in tests); the entry is Nix's grammar.
_STORE_PATH = re.compile(
    r"(?:/[A-Za-z0-9._+-]+)+/[0-9a-df-np-sv-z]{32}-[A-Za-z0-9+\-_?=][A-Za-z0-9+\-._?=]{0,210}"
)
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]{0,199}")

_RECORD_KEYS = frozenset(
    {"schema", "variant", "package", "branch", "platform", "commit", "runner"}
    | {"build", "test", "publish"}
)


def from_json(data: object, source: str) -> ResultRecord:
    if not isinstance(data, dict):
        raise InputError(f"{source}: a result record must be a JSON object")
    schema = data.get("schema")
    if type(schema) is not int or schema not in READABLE_SCHEMAS:
        readable = " and ".join(str(n) for n in READABLE_SCHEMAS)
        raise InputError(
            f"{source}: result schema {schema!r} is not supported (this ci-tools reads schema "
            f"{readable}, writes {SCHEMA}); rebuild the record with this version of ci-tools"
        )
    try:
        _keys(data, _RECORD_KEYS, "")
        return ResultRecord(
            variant=_match(data, "variant", _NAME, ""),
            package=_match(data, "package", _NAME, ""),
            branch=_match(data, "branch", _BRANCH, ""),
            platform=_text(data, "platform", ""),
            commit=_optional_text(data, "commit", ""),
            runner=_optional_text(data, "runner", ""),
            build=_build(data.get("build")),
            test=_test(data.get("test")),
            publish=_publish(data.get("publish")),
        )
    except _Bad as exc:
        raise InputError(f"{source}: malformed result record: {exc}") from None


def _where(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _show(value: object) -> str:
    return (json.dumps(value) if not isinstance(value, float) else repr(value))[:60]


def _keys(data: Mapping[str, Any], allowed: frozenset[str], prefix: str) -> None:
    for key in data:
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise _Bad(_where(prefix, str(key)), f"unknown field (known: {known})")


def _object(value: object, where: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(where, f"must be an object or null, not {_show(value)}")
    _keys(value, allowed, where)
    return value


def _required(data: Mapping[str, Any], key: str, prefix: str) -> Any:
    if key not in data:
        raise _Bad(_where(prefix, key), "missing")
    return data[key]


def _checked_text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _Bad(where, f"must be a string, not {_show(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Bad(where, "holds a lone surrogate, which is not text") from None
    return value


def _text(data: Mapping[str, Any], key: str, prefix: str, default: str | None = None) -> str:
    if key not in data and default is not None:
        return default
    return _checked_text(_required(data, key, prefix), _where(prefix, key))


def _optional_text(data: Mapping[str, Any], key: str, prefix: str) -> str | None:
    value = data.get(key)
    return None if value is None else _checked_text(value, _where(prefix, key))


def _match(data: Mapping[str, Any], key: str, grammar: re.Pattern[str], prefix: str) -> str:
    value = _text(data, key, prefix)
    if not grammar.fullmatch(value):
        raise _Bad(_where(prefix, key), f"{_show(value)} is not a valid name")
    return value


def _count(data: Mapping[str, Any], key: str, prefix: str, *, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    # bool is an int to Python, not to anyone reading the record; 10**400 bytes is no size.
    counted = digits.count(value)
    if counted is None:
        raise _Bad(
            _where(prefix, key),
            f"must be a whole number from 0 to {digits.MAX_SAFE_INTEGER}, not {_show(value)}",
        )
    return counted


def _seconds(data: Mapping[str, Any], key: str, prefix: str, *, required: bool) -> float | None:
    if key not in data and not required:
        return None
    value = _required(data, key, prefix)
    if value is None and not required:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise _Bad(
            _where(prefix, key), f"must be a finite number of seconds >= 0, not {_show(value)}"
        )
    return float(value)


def _status(data: Mapping[str, Any], key: str, prefix: str, allowed: Iterable[StrEnum]) -> str:
    value = _required(data, key, prefix)
    names = [s.value for s in allowed]
    if not isinstance(value, str) or value not in names:
        raise _Bad(_where(prefix, key), f"must be one of {', '.join(names)}, not {_show(value)}")
    return value


_BUILD_KEYS = frozenset(
    {"status", "seconds", "store_path", "closure_bytes", "log_tail", "attempts", "started_at"}
    | {"cache", "outputs"}
)
_OUTPUT_KEYS = frozenset({"store_path", "nar_hash", "nar_size"})
_CACHE_KEYS = frozenset({"status", "url", "detail", "attempts"})
_TEST_KEYS = frozenset({"status", "checks", "figures", "runner", "route"})
_ROUTE_KEYS = frozenset({"scope", "reason"})
_CHECK_KEYS = frozenset({"name", "status", "detail"})
_FIGURES_KEYS = frozenset({"libraries", "import_seconds", "import_runs", "package_bytes"})
_LIBRARY_KEYS = frozenset({"name", "bytes"})
_PUBLISH_KEYS = frozenset({"status", "org", "attempts", "detail"})


def _build(value: object) -> BuildOutcome | None:
    if value is None:
        return None
    data = _object(value, "build", _BUILD_KEYS)
    seconds = _seconds(data, "seconds", "build", required=True)
    assert seconds is not None
    return BuildOutcome(
        status=Status(_status(data, "status", "build", BUILD_STATUSES)),
        seconds=seconds,
        store_path=_optional_text(data, "store_path", "build"),
        closure_bytes=_count(data, "closure_bytes", "build", default=None),
        log_tail=_text(data, "log_tail", "build", default=""),
        attempts=_count(data, "attempts", "build", default=1) or 0,
        started_at=_optional_text(data, "started_at", "build"),
        cache=_cache(data.get("cache")),
        outputs=_outputs(data.get("outputs", [])),
    )


def _outputs(value: object) -> tuple[Output, ...]:
    # A tuple is what `to_json` (asdict) gives before the record is written as JSON.
    if not isinstance(value, (list, tuple)):
        raise _Bad("build.outputs", f"must be a list, not {_show(value)}")
    found = []
    for index, item in enumerate(value):
        where = f"build.outputs[{index}]"
        data = _object(item, where, _OUTPUT_KEYS)
        nar_hash = _text(data, "nar_hash", where)
        if not _NAR_HASH.fullmatch(nar_hash):
            raise _Bad(f"{where}.nar_hash", f"{_show(nar_hash)} is not sha256-<base64> (SRI)")
        size = _count(data, "nar_size", where, default=None)
        if size is None:
            raise _Bad(f"{where}.nar_size", "missing")
        path = _text(data, "store_path", where)
        if not _STORE_PATH.fullmatch(path):
            raise _Bad(f"{where}.store_path", f"{_show(path)} is not an absolute store path")
        found.append(Output(store_path=path, nar_hash=nar_hash, nar_size=size))
    return tuple(found)


def _cache(value: object) -> CacheOutcome | None:
    if value is None:
        return None
    data = _object(value, "build.cache", _CACHE_KEYS)
    return CacheOutcome(
        status=CacheStatus(_status(data, "status", "build.cache", CacheStatus)),
        url=_text(data, "url", "build.cache"),
        detail=_text(data, "detail", "build.cache", default=""),
        attempts=_count(data, "attempts", "build.cache", default=1) or 0,
    )


def _route(value: object) -> Route | None:
    if value is None:
        return None
    data = _object(value, "test.route", _ROUTE_KEYS)
    scope = _required(data, "scope", "test.route")
    if scope not in ROUTE_SCOPES:
        raise _Bad(
            "test.route.scope", f"must be one of {', '.join(ROUTE_SCOPES)}, not {_show(scope)}"
        )
    return Route(scope=scope, reason=_text(data, "reason", "test.route", default=""))


def _test(value: object) -> TestOutcome | None:
    if value is None:
        return None
    data = _object(value, "test", _TEST_KEYS)
    checks = data.get("checks", [])
    if not isinstance(checks, list):
        raise _Bad("test.checks", f"must be a list, not {_show(checks)}")
    return TestOutcome(
        status=Status(_status(data, "status", "test", CHECK_STATUSES)),
        checks=tuple(_check(c, f"test.checks[{i}]") for i, c in enumerate(checks)),
        figures=_figures(data.get("figures")),
        runner=_optional_text(data, "runner", "test"),
        route=_route(data.get("route")),
    )


def _check(value: object, where: str) -> Check:
    data = _object(value, where, _CHECK_KEYS)
    return Check(
        name=_text(data, "name", where),
        status=Status(_status(data, "status", where, CHECK_STATUSES)),
        detail=_text(data, "detail", where, default=""),
    )


def _figures(value: object) -> Figures | None:
    if value is None:
        return None
    data = _object(value, "test.figures", _FIGURES_KEYS)
    libraries = data.get("libraries", [])
    if not isinstance(libraries, list):
        raise _Bad("test.figures.libraries", f"must be a list, not {_show(libraries)}")
    libs = []
    for index, item in enumerate(libraries):
        where = f"test.figures.libraries[{index}]"
        lib = _object(item, where, _LIBRARY_KEYS)
        size = _count(lib, "bytes", where, default=None)
        if size is None:
            raise _Bad(f"{where}.bytes", "missing")
        libs.append(Library(name=_text(lib, "name", where), bytes=size))
    return Figures(
        libraries=tuple(libs),
        import_seconds=_seconds(data, "import_seconds", "test.figures", required=False),
        import_runs=_count(data, "import_runs", "test.figures", default=0) or 0,
        package_bytes=_count(data, "package_bytes", "test.figures", default=None),
    )


def _publish(value: object) -> PublishOutcome | None:
    if value is None:
        return None
    data = _object(value, "publish", _PUBLISH_KEYS)
    return PublishOutcome(
        status=PublishStatus(_status(data, "status", "publish", PublishStatus)),
        org=_text(data, "org", "publish"),
        attempts=_count(data, "attempts", "publish", default=1) or 0,
        detail=_text(data, "detail", "publish", default=""),
    )
