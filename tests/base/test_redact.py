"""The redactor of known secrets: which secrets, in which forms."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from ci_tools.base import redact

TOKEN = "floxhub_SeCrEt_0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*redact.SECRET_VARIABLES, *redact.KEY_FILE_VARIABLES):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("variable", redact.SECRET_VARIABLES)
def test_every_token_variable_is_masked(variable: str) -> None:
    assert redact.redact(f"token {TOKEN}!", {variable: TOKEN}) == "token ***!"


@pytest.mark.parametrize(
    "form",
    [
        TOKEN,
        quote(TOKEN + "/+", safe=""),
        json.dumps(TOKEN + '"\\')[1:-1],
        base64.b64encode(TOKEN.encode()).decode(),
        base64.b64encode(TOKEN.encode()).decode().rstrip("="),
        base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("="),
    ],
)
def test_the_forms_a_tool_prints_a_secret_in(form: str) -> None:
    secret = TOKEN + ("/+" if "%2F" in form else "" if '\\"' not in form else '"\\')
    assert form not in redact.redact(f"say {form} end", {"GITHUB_TOKEN": secret})


def test_the_process_environment_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", TOKEN)
    assert redact.redact(TOKEN) == "***"


def test_short_and_empty_values_are_not_secrets() -> None:
    assert redact.redact("abc and abcdefg", {"GITHUB_TOKEN": "abc", "GH_TOKEN": ""}) == (
        "abc and abcdefg"
    )


def test_a_secret_holding_another_is_masked_whole() -> None:
    text = redact.redact(
        "x-token-0123456789-tail",
        {"GH_TOKEN": "token-0123456789", "GITHUB_TOKEN": "x-token-0123456789-tail"},
    )
    assert text == "***"


def test_the_signing_key_a_variable_names_is_masked(tmp_path: Path) -> None:
    key = tmp_path / "signing.key"
    secret = base64.b64encode(bytes(range(64))).decode()
    key.write_text(f"cache.example.org-1:{secret}\n", encoding="utf-8")
    said = redact.redact(
        f"using key {secret} (cache.example.org-1:{secret})",
        {"FLOX_PUBLISH_SIGNING_PRIVATE_KEY": str(key)},
    )
    assert secret not in said


def test_a_key_variable_naming_no_regular_file_is_ignored(tmp_path: Path) -> None:
    env = {"FLOX_PUBLISH_SIGNING_PRIVATE_KEY": str(tmp_path)}
    assert redact.redact("nothing to hide here", env) == "nothing to hide here"
    env = {"FLOX_PUBLISH_SIGNING_PRIVATE_KEY": str(tmp_path / "missing")}
    assert redact.redact("nothing to hide here", env) == "nothing to hide here"


# --- issue 29: the cache's signing key, its variable and every encoding of it ---------------

KEY_HALF = base64.b64encode(bytes(range(7, 71))).decode()
KEY = f"fleet-1:{KEY_HALF}"


def _encodings(text: str) -> list[str]:
    raw = text.encode()
    return [
        text,
        quote(text, safe=""),
        re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(text, safe="")),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(),
        raw.hex().upper(),
    ]


SIGNING_FORMS = [
    *_encodings(KEY),
    *_encodings(KEY_HALF),
    base64.b64decode(KEY_HALF).hex(),  # the key's bytes, as a hex dump prints them
    base64.b64decode(KEY_HALF).hex().upper(),
]


def test_the_signing_key_variable_is_redacted() -> None:
    assert "CI_TOOLS_SIGNING_KEY" in redact.SECRET_VARIABLES
    said = redact.redact(f"key {KEY} half {KEY_HALF}.", {"CI_TOOLS_SIGNING_KEY": KEY})
    assert said == "key *** half ***."


@pytest.mark.parametrize("form", SIGNING_FORMS)
def test_the_signing_key_is_masked_in_every_encoding(form: str, tmp_path: Path) -> None:
    said = redact.redact(f"say {form} end", {"CI_TOOLS_SIGNING_KEY": KEY})
    assert form not in said and "***" in said
    key_file = tmp_path / "signing.key"
    key_file.write_text(KEY + "\n", encoding="utf-8")
    said = redact.redact(f"say {form} end", {"FLOX_PUBLISH_SIGNING_PRIVATE_KEY": str(key_file)})
    assert form not in said and "***" in said


@pytest.mark.parametrize("form", SIGNING_FORMS)
def test_what_nix_says_while_pushing_is_masked_in_every_encoding(form: str) -> None:
    from ci_tools.base import nixcache

    said = nixcache._redactor(KEY)(f"error: {form} end")
    assert form not in said and "***" in said
