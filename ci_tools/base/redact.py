"""The one redactor of known secrets.

A secret ci-tools can know of is a token in its environment (`SECRET_VARIABLES`) or the
content of the signing key a variable names (`KEY_FILE_VARIABLES`). Whatever a child process
says (`proc`: captured output, streamed lines) and whatever ci-tools prints (`escape`'s
guarded streams) passes through `redact` first, so a tool that quotes its token in an error
cannot carry it into a log, a result record, a release asset or release notes.

Each secret is masked in the forms a tool is likely to print it in: as is, each of its lines
(a key file), percent-encoded (a URL; upper- or lowercase escapes), JSON-escaped, base64 (an
`Authorization: Basic` header of the secret alone) and hex (a dump); a Nix key
(`NAME:BASE64`) also by its secret half alone, and that half's bytes in hex. Values shorter than `MIN_LENGTH` are not masked: masking every
"abc" would garble the log and protect nothing a guess would not find.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

MASK = "***"
MIN_LENGTH = 8
# Tokens: FloxHub's (flox >= 1.14 reads it in CI), GitHub's (ci-tools and gh), and the
# runner's own, which a child process inherits.
SECRET_VARIABLES = (
    "FLOX_FLOXHUB_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    # The fleet cache's signing key itself (NAME:BASE64), as the step that pushes gets it
    # (runners.yaml `cache.signing_key_secret`, commands/_fleet.py).
    "CI_TOOLS_SIGNING_KEY",
)
# Variables naming a file whose content is secret: flox's `publish.signing_private_key`
# set through the environment (flox config: every option as FLOX_<SCREAMING_SNAKE_CASE>),
# the Nix signing key `flox publish` signs the cache upload with.
KEY_FILE_VARIABLES = ("FLOX_PUBLISH_SIGNING_PRIVATE_KEY",)
# A Nix secret key ("name:base64") is about 100 bytes; nothing larger is read.
MAX_KEY_FILE_BYTES = 16 << 10


@dataclass(frozen=True)
class Redactor:
    """Masks each of `secrets` (longest first, so a secret holding another is masked whole)."""

    secrets: tuple[str, ...]

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text


def known(env: Mapping[str, str] | None = None) -> Redactor:
    """The secrets of this process's environment and of `env` (a child's), in every form."""
    sources = [os.environ] if env is None or env is os.environ else [os.environ, env]
    values: set[str] = set()
    for source in sources:
        for name in SECRET_VARIABLES:
            values.update(key_parts(source.get(name, "")))
        for name in KEY_FILE_VARIABLES:
            values.update(_key_file(source.get(name, "")))
    return of(values)


def of(values: Iterable[str]) -> Redactor:
    """A redactor of `values` (empty ones and short ones are left out)."""
    wanted = [value for value in values if len(value.strip()) >= MIN_LENGTH]
    if not wanted:  # the common case outside CI: nothing to mask, nothing to import
        return Redactor(secrets=())
    return Redactor(secrets=tuple(sorted(_forms(wanted), key=lambda s: (-len(s), s))))


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    return known(env)(text)


def _forms(values: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for value in values:
        for part in (value, value.strip(), *value.splitlines()):
            part = part.strip()
            if len(part) >= MIN_LENGTH:
                out.update(_encodings(part))
    return {form for form in out if len(form) >= MIN_LENGTH}


def _encodings(part: str) -> set[str]:
    import base64
    import binascii
    import json
    import re
    from urllib.parse import quote

    raw = part.encode("utf-8", "surrogatepass")
    encoded = base64.b64encode(raw).decode("ascii")
    quoted = quote(part, safe="")
    forms = {
        part,
        quoted,
        re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quoted),
        json.dumps(part)[1:-1],
        encoded,
        encoded.rstrip("="),
        base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="),
        raw.hex(),
        raw.hex().upper(),
    }
    try:  # base64 itself (a Nix key's secret half): its bytes in hex too
        decoded = base64.b64decode(part, validate=True)
    except (binascii.Error, ValueError):
        return forms
    if len(decoded) >= MIN_LENGTH:
        forms.update({decoded.hex(), decoded.hex().upper()})
    return forms


def _key_file(name: str) -> list[str]:
    """The secret a key file holds: its text, and the key after `name:` (Nix's format)."""
    if not name:
        return []
    path = Path(name)
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return []
        with path.open("rb") as handle:
            text = handle.read(MAX_KEY_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    return key_parts(text)


def key_parts(text: str) -> list[str]:
    """A secret, and each line's part after `name:` (a Nix key's secret half)."""
    return [text, *(line.partition(":")[2] for line in text.splitlines())]
