"""How the real flox reports a failed command."""

from __future__ import annotations


class FloxError(Exception):
    """A refusal. flox prints anyhow errors as `❌ ERROR: <message>` on stderr and exits 1
    (cli/flox/src/main.rs; every `bail!` of the commands below ends there)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
