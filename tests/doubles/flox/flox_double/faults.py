"""Failures a test asks for: FLOX_DOUBLE_FAIL="NAME=MODE,..." with MODE one of
eval (Nix evaluation error), build (the builder fails: a compile error), transient (a download
or upload fails with HTTP 503 on every attempt) or transient:N (on the first N attempts only;
attempts are counted from FLOX_DOUBLE_LOG, which must then be set). The messages have the
shape of Nix 2.x's and flox's own."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_MODE = re.compile(r"eval|build|transient(?::[1-9][0-9]*)?")


class FaultConfigError(Exception):
    pass


@dataclass(frozen=True, kw_only=True)
class Fault:
    mode: str  # eval | build | transient
    times: int | None  # transient:N; None = always


def parse(environ: Mapping[str, str]) -> dict[str, Fault]:
    spec = environ.get("FLOX_DOUBLE_FAIL", "")
    faults: dict[str, Fault] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, mode = item.partition("=")
        if not sep or not name or not _MODE.fullmatch(mode):
            raise FaultConfigError(
                f"FLOX_DOUBLE_FAIL: {item!r} is not NAME=eval|build|transient|transient:N"
            )
        kind, _, count = mode.partition(":")
        faults[name] = Fault(mode=kind, times=int(count) if count else None)
    return faults


def attempts(environ: Mapping[str, str], command: str, name: str) -> int:
    """How many times `flox COMMAND ... NAME` has been called, this call included."""
    log = environ.get("FLOX_DOUBLE_LOG")
    if not log:
        raise FaultConfigError("FLOX_DOUBLE_FAIL with transient:N needs FLOX_DOUBLE_LOG")
    count = 0
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        argv = json.loads(line)["argv"]
        if argv and argv[0] == command and name in argv[1:]:
            count += 1
    return count


def active(fault: Fault | None, environ: Mapping[str, str], command: str, name: str) -> str:
    """The failure mode that applies to this call, or "" for none."""
    if fault is None:
        return ""
    if fault.mode == "transient" and fault.times is not None:
        return "transient" if attempts(environ, command, name) <= fault.times else ""
    return fault.mode


def eval_error(name: str, file: Path) -> str:
    return (
        "error:\n"
        f"       … while defining '{name}' by evaluating '{file}'\n\n"
        f"       error: undefined variable 'cudaPackages_13_9'\n\n"
        f"       at {file}:12:5:\n"
    )


def build_error(name: str) -> str:
    drv = f"/nix/store/8ns0y6bqzd4dkqxkk9w3i6rsgzsnhzd7-{name}.drv"
    return (
        f"error: builder for '{drv}' failed with exit code 1;\n"
        "       last 3 log lines:\n"
        "       > aten/src/ATen/native/Foo.cpp:12:5: error: 'bar' was not declared in this scope\n"
        "       > ninja: build stopped: subcommand failed.\n"
        "       > error: subprocess-exited-with-error\n"
        f"       For full logs, run 'nix log {drv}'.\n"
    )


def download_error() -> str:
    return (
        "error: unable to download "
        "'https://cache.nixos.org/nar/1m2rkd0k1c8w1rnqjzl1v6lmxc6vvbws.nar.xz': HTTP error 503\n"
    )


def upload_error(org: str) -> str:
    return (
        f"❌ ERROR: Failed to upload to the catalog store of '{org}': "
        "HTTP status client error (503 Service Unavailable)\n"
    )
