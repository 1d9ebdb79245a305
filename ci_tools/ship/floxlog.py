"""What `flox publish` logs about the store paths it uploads, and how ci-tools asks for it.

flox names each uploaded output in two places (flox/flox 6536dac, cli/flox-rust-sdk/src/
providers/publish.rs, `upload_store_path`): the progress span "Uploading '<path>'", which
its logger draws through indicatif only on a terminal and drops from plain log lines
(cli/flox/src/utils/init/logger.rs, `FilteredFormatFields` without the `progress` field),
and a debug event, `debug!(%store_path, .., "Uploading store path to cache")`, logged before
`nix copy` runs, in every environment, whenever the log filter lets it through (there since
flox 5f1bc3428, 2024-12-12). The filter is `RUST_LOG` when set and valid, else the one
`--verbose` picks (logger.rs `update_filters`, `EnvFilter::try_from_default_env`), so
`flox_log_env` sets flox's default filter plus debug for that one module: the event is a
plain log line on a pipe, with no terminal, no redraw timing and no prompts involved.

Where flox uploads nothing it says why, at the same level: "skipping artifact upload"
(a null catalog store, or no outputs) or "collecting narinfo from local store (no artifact
upload)" (a metadata-only store), `ClientSideCatalogStoreConfig::maybe_upload_artifacts`.

Its other debug events of that module carry URLs and the `nix copy` command line, whose
environment flox redacts only for the variables it knows (cli/flox-rust-sdk/src/utils/
mod.rs, `SENSITIVE_ENV_VARS`): they are read here and never passed on to a log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# flox's own default (logger.rs `init_logger`, Verbose(0): "warn,flox::utils::message=info",
# which keeps its user messages such as "Package already published.") plus the publish
# provider's debug events. An EnvFilter target matches by prefix, the longest one wins.
FLOX_LOG_FILTER = "warn,flox::utils::message=info,flox_rust_sdk::providers::publish=debug"

# CSI (colours, erase line), OSC (titles, links) and two-character escapes: what a log line
# drawn with colours (FORCE_COLOR or CLICOLOR_FORCE make flox colour a pipe too) carries.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# tracing-subscriber's full format with flox's timer (logger.rs DeltaTimer, "%H:%M:%S%.3f"):
# "<time> <LEVEL> <spans>: <target>: <message> <fields>". Only such records are read: a build
# log line that merely mentions an upload is not one.
_RECORD = re.compile(r"^\s*\d\d:\d\d:\d\d\.\d{3}\s+(?:TRACE|DEBUG)\s")
_UPLOAD = re.compile(
    r"\sflox_rust_sdk::providers::publish: Uploading store path to cache\b.*?\sstore_path=(/\S+)"
)
_DECLINED = re.compile(r"\b(skipping artifact upload|no artifact upload)\b")
_REASON = re.compile(r'\breason="([^"]*)"')


def flox_log_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with flox's log filter set to name every upload (a caller's RUST_LOG is
    replaced: it could hide the event, or the user messages read after the run)."""
    return {**environ, "RUST_LOG": FLOX_LOG_FILTER}


def plain(line: str) -> list[str]:
    """The text a terminal would have shown for `line`: escape sequences removed, each part
    a carriage return redraws over kept (the log line may follow a redrawn spinner)."""
    text = _ANSI.sub("", line)
    return [part for part in text.split("\r") if part.strip()]


def is_record(line: str) -> bool:
    """Whether `line` is one of flox's debug log records (read, never passed on)."""
    return any(_RECORD.match(part) for part in plain(line))


def uploaded_paths(lines: Iterable[str]) -> tuple[str, ...]:
    """The store paths flox said it uploads, in order, each once."""
    found = (
        m.group(1)
        for line in lines
        for part in plain(line)
        if _RECORD.match(part)
        for m in _UPLOAD.finditer(part)
    )
    return tuple(dict.fromkeys(found))


def declined(lines: Iterable[str]) -> str | None:
    """flox's reason for uploading nothing, when it gave one."""
    for line in lines:
        for part in (p for p in plain(line) if _RECORD.match(p)):
            found = _DECLINED.search(part)
            if found is not None:
                reason = _REASON.search(part)
                return reason.group(1) if reason else found.group(1)
    return None
