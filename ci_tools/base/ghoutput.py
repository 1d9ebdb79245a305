"""Talking to GitHub Actions: step outputs (`$GITHUB_OUTPUT`) and notices.

Outputs use GitHub's documented `name=value` lines; a value with a line break (none of ours
has one: compact JSON escapes them) would use the `name<<DELIMITER` form with a random
delimiter. Notices go to stderr, where the runner reads workflow commands as well, so that
stdout stays pure JSON.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from ci_tools.base import bounded, errors, escape
from ci_tools.base.errors import InputError


def on_actions(env: Mapping[str, str]) -> bool:
    return env.get("GITHUB_ACTIONS") == "true"


def output_path(env: Mapping[str, str]) -> Path:
    value = env.get("GITHUB_OUTPUT")
    if not value:
        raise InputError(
            "--github-output needs $GITHUB_OUTPUT, the file GitHub Actions gives each step "
            "for its outputs; it is unset (outside a workflow, leave --github-output out)"
        )
    return Path(value)


def format_outputs(outputs: Mapping[str, str]) -> str:
    lines: list[str] = []
    for name, value in outputs.items():
        if "\n" in value or "\r" in value:
            import secrets  # only here: it costs the common path a few milliseconds

            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
            lines += [f"{name}<<{delimiter}", value, delimiter]
        else:
            lines.append(f"{name}={value}")
    return "".join(line + "\n" for line in lines)


def append_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append every output in one write, so a failure cannot leave half of them."""
    text = format_outputs(outputs)
    try:
        with path.open("a", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as exc:
        raise InputError(
            f"cannot write the step outputs to $GITHUB_OUTPUT ({path}): {exc}"
        ) from None


def notice(message: str, env: Mapping[str, str], stream: TextIO | None = None) -> None:
    """A `::notice::` annotation under GitHub Actions, a plain line on stderr elsewhere."""
    _annotate("notice", message, env, stream)


def warning(message: str, env: Mapping[str, str], stream: TextIO | None = None) -> None:
    _annotate("warning", message, env, stream)


def _annotate(level: str, message: str, env: Mapping[str, str], stream: TextIO | None) -> None:
    out = stream if stream is not None else sys.stderr
    message = bounded.shorten(message, 1200)  # a notice quoting a huge input is not echoed whole
    if on_actions(env):
        escape.write_command(out, f"::{level}::{escape_data(message)}")
    else:
        print(f"ci-tools: {level}: {message}", file=out)


def escape_data(text: str) -> str:
    """Workflow-command escaping, so a message cannot end early or inject a command."""
    return errors.escape_data(text)
