"""flox's logger, as far as `flox publish` shows through it (flox/flox 6536dac,
cli/flox/src/utils/init/logger.rs): which events the filter lets through, whether they are
coloured, and the line tracing-subscriber's full format writes for one."""

from __future__ import annotations

import time
from collections.abc import Mapping

LEVELS = ("off", "error", "warn", "info", "debug", "trace")
# logger.rs `init_logger`, Verbosity::Verbose(0): the filter without -v and without RUST_LOG.
DEFAULT_FILTER = "warn,flox::utils::message=info"

Directive = tuple[str, int]  # (target prefix, "" for every target; level index)


def _directives(text: str) -> list[Directive] | None:
    """tracing-subscriber's EnvFilter syntax, static directives only (`target=level`,
    `level`, `target`); None when one is invalid (EnvFilter::try_new fails on it)."""
    found: list[Directive] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        target, eq, level = item.rpartition("=") if "=" in item else ("", "", item)
        level = level.strip().lower()
        if not eq and level not in LEVELS:
            found.append((level, LEVELS.index("trace")))  # a bare target: everything in it
        elif level in LEVELS and "[" not in target:
            found.append((target.strip(), LEVELS.index(level)))
        else:
            return None
    return found


def _filter(environ: Mapping[str, str]) -> list[Directive]:
    # logger.rs `update_filters`: RUST_LOG when it parses, else the verbosity's filter.
    from_env = _directives(environ.get("RUST_LOG", "")) if "RUST_LOG" in environ else None
    default = _directives(DEFAULT_FILTER)
    assert default is not None
    return from_env if from_env is not None else default


def enabled(environ: Mapping[str, str], target: str, level: str) -> bool:
    """Whether an event of `target` at `level` is logged: the matching directive with the
    longest target decides (a target matches by string prefix, as EnvFilter does)."""
    matching = [d for d in _filter(environ) if target.startswith(d[0])]
    if not matching:
        return False
    _, allowed = max(matching, key=lambda d: len(d[0]))
    return LEVELS.index(level) <= allowed


def coloured(environ: Mapping[str, str], is_tty: bool) -> bool:
    """supports-color 3.0.2 `supports_color` (flox-core util/message.rs
    `stderr_supports_color`): a FORCE_COLOR above 0, else a CLICOLOR_FORCE other than "0",
    colours even a pipe; otherwise NO_COLOR (other than "0"), TERM=dumb or a pipe turn
    colours off."""
    force = environ.get("FORCE_COLOR")
    if force is None:
        forced = environ.get("CLICOLOR_FORCE", "0") != "0"
    else:
        # "true" and "" are 1, "false" 0, a number itself, anything else 1
        forced = force != "false" and (not force.isdigit() or int(force) > 0)
    if forced:
        return True
    no_color = environ.get("NO_COLOR", "0") != "0"
    return is_tty and not no_color and environ.get("TERM") != "dumb"


def record(
    *,
    level: str,
    spans: str,
    target: str,
    message: str,
    fields: Mapping[str, str],
    colours: bool,
) -> str:
    """One event in tracing-subscriber's full format with flox's timer (logger.rs DeltaTimer,
    "%H:%M:%S%.3f"): "<time> <LEVEL> <spans>: <target>: <message> <field>=<value>..."; with
    colours the level is coloured, the target dimmed and each field name italic."""
    now = time.time()
    stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
    if not colours:
        pairs = " ".join(f"{k}={v}" for k, v in fields.items())
        return f"{stamp} {level.upper():>5} {spans}: {target}: {message} {pairs}"
    pairs = " ".join(f"\x1b[3m{k}\x1b[0m\x1b[2m=\x1b[0m{v}" for k, v in fields.items())
    return (
        f"{stamp} \x1b[34m{level.upper():>5}\x1b[0m \x1b[1m{spans}\x1b[0m\x1b[2m:\x1b[0m "
        f"\x1b[2m{target}\x1b[0m\x1b[2m:\x1b[0m {message} {pairs}"
    )
