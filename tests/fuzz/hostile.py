"""Hostile neighbours for the fuzz classes: tools on PATH that say what an attacker wants, and
the runner's own reading of a log, to tell whether any of it became a workflow command.

A hostile tool is a real executable (a Python script) named like the tool it replaces; it
prints fixed bytes, may quote secrets from its environment in several encodings, and exits
with a chosen code. It refuses nothing: it is the attacker, not a double.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import quote

MARKER = "PWNED20"  # in every injected command: a command carrying it was obeyed
SECRETS = {
    "FLOX_FLOXHUB_TOKEN": "floxhub_SeCrEt_0123456789abcdefXYZ",
    "GITHUB_TOKEN": "ghs_SeCrEtGitHub0123456789abcdefXYZ",
    "GH_TOKEN": "gho_SeCrEtGh0123456789abcdefXYZ",
}

# Lines the runner would obey, each in another disguise (actions/runner ActionCommand.cs:
# TryParseV2 trims leading white space and wants `::`; TryParse finds `##[` anywhere; the
# runner's line reader also ends a line at a lone `\r`).
COMMANDS = (
    f"::add-mask::{MARKER}",
    f"::error title={MARKER}::{MARKER} injected",
    f"  ::warning::{MARKER} indented",
    f"\t::notice::{MARKER} after a tab",
    f"\u00a0\u2003::debug::{MARKER} after Unicode spaces",
    f"::stop-commands::{MARKER}",
    f"::{MARKER}::",
    f"progress 50%\r::error::{MARKER} after a carriage return",
    f"compiling ##[warning]{MARKER} v1 in the middle",
    f"##[group]{MARKER}",
    f"::set-output name=x::{MARKER}",
    f"::error::{MARKER} in red\x1b[31m, a terminal escape",
    f"::ERROR::{MARKER} in capitals",
)


def secret_forms(secret: str) -> list[str]:
    """The encodings a tool may print a secret in: as is, in a URL, in JSON, in base64."""
    raw = secret.encode()
    return [
        secret,
        quote(secret, safe=""),
        json.dumps(secret)[1:-1],
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    ]


def tool(
    folder: Path,
    name: str,
    *,
    lines: Iterable[str],
    code: int,
    quote_env: Sequence[str] = (),
    stderr_too: bool = True,
) -> Path:
    """An executable `folder/name` printing `lines` (stdout and stderr alternately, or only
    stdout), then each variable of `quote_env` in every encoding of `secret_forms`, then
    exiting with `code`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    script = f"""#!{sys.executable}
import base64, json, os, sys
from urllib.parse import quote
for i, line in enumerate({list(lines)!r}):
    (sys.stdout if i % 2 == 0 or {not stderr_too!r} else sys.stderr).write(line + "\\n")
for name in {list(quote_env)!r}:
    value = os.environ.get(name, "")
    raw = value.encode()
    print(f"error: authentication failed with token {{value}} for {{name}}")
    print("url: https://floxhub.example/login?token=" + quote(value, safe=""))
    print("json: " + json.dumps({{"token": value}}))
    print("header: Authorization: Basic " + base64.b64encode(raw).decode())
    print("b64url: " + base64.urlsafe_b64encode(raw).decode().rstrip("="))
sys.stdout.flush(); sys.stderr.flush()
sys.exit({code})
"""
    path.write_text(script, encoding="utf-8")
    path.chmod(0o755)
    return path


# .NET's char.IsWhiteSpace (what TrimStart removes): Zs, Zl, Zp, U+0009-U+000D, U+0085, U+00A0.
_DOTNET_SPACE = re.compile(r"^[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*")


def workflow_commands(log: str) -> list[str]:
    """The lines of `log` the runner would read as workflow commands."""
    found = []
    for line in re.split(r"\r\n|\r|\n", log):
        trimmed = line[_DOTNET_SPACE.match(line).end() :]  # type: ignore[union-attr]
        v2 = trimmed.startswith("::") and trimmed.find("::", 2) > 0
        if v2 or "##[" in line:
            found.append(line)
    return found


OWN_COMMANDS = frozenset({"error", "warning", "notice"})  # what ci-tools itself emits


def obeyed(log: str) -> list[str]:
    """The workflow commands of `log` that a child injected: any v1 (`##[`) command, any
    command ci-tools never emits, and any with MARKER in its name, its properties or at the
    start of its data (every payload in COMMANDS has it there). ci-tools' own annotations
    may quote the marker later in their data: escaped, it is only text."""
    found = []
    for line in workflow_commands(log):
        trimmed = line[_DOTNET_SPACE.match(line).end() :]  # type: ignore[union-attr]
        if "##[" in line or not trimmed.startswith("::"):
            found.append(line)
            continue
        head, _, data = trimmed[2:].partition("::")
        name = head.split(" ", 1)[0].lower()
        if name not in OWN_COMMANDS or MARKER in head or data.startswith(MARKER):
            found.append(line)
    return found


def leaked(text: str, secrets: Iterable[str] = SECRETS.values()) -> list[str]:
    """Every form of every secret that `text` holds."""
    return [form for secret in secrets for form in secret_forms(secret) if form in text]
