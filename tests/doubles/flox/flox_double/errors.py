"""How the real flox reports a failed command."""

from __future__ import annotations


class FloxError(Exception):
    """A refusal. flox prints anyhow errors as `❌ ERROR: <message>` on stderr and exits 1
    (cli/flox/src/main.rs:201 and cli/flox-core/src/util/message.rs:5 `format_error`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
