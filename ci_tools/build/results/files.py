"""Result records as files: `<variant>.result.json`, written whole, read by the one loader."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ci_tools.base import bounded
from ci_tools.base.errors import InputError
from ci_tools.base.fsutil import atomic_write_text
from ci_tools.build.results.records import ResultRecord
from ci_tools.build.results.validate import from_json

RESULT_SUFFIX = ".result.json"
# A record is a few kilobytes (log tails are capped); anything far larger is not one.
MAX_RECORD_BYTES = 8 << 20


def result_path(directory: Path, variant: str) -> Path:
    return directory / f"{variant}{RESULT_SUFFIX}"


def save(record: ResultRecord, path: Path) -> None:
    atomic_write_text(path, json.dumps(record.to_json(), indent=2, sort_keys=False) + "\n")


def load(path: Path) -> ResultRecord:
    """Read and check one record; InputError (exit 2) naming the file and the field.

    A record is tied to its variant: `X.result.json` must hold the record of X, so a record
    copied under another variant's name proves nothing about that variant."""
    try:
        text = bounded.read_text(path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        raise InputError(f"{path}: no such result file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a readable result record: {exc}") from None
    record = parse(text, str(path))
    named = path.name.removesuffix(RESULT_SUFFIX)
    if path.name.endswith(RESULT_SUFFIX) and record.variant != named:
        raise InputError(
            f"{path}: holds the record of {record.variant}, not of {named}: a record is read "
            f"only as <variant>{RESULT_SUFFIX} of its own variant"
        )
    return record


def parse(text: str, source: str) -> ResultRecord:
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not a readable result record: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: not a result record: JSON nested too deeply") from None
    except ValueError as exc:  # NaN/Infinity, 1e400, integers over Python's digit limit
        raise InputError(f"{source}: not a result record: {exc}") from None
    return from_json(data, source)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a number")
    return value


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
