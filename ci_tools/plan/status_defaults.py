"""What `ci-tools matrix` needs of `statuses` to parse its options: the defaults of
`--lookback`, `--max-api-calls` and `--trusted-creator`, and the login check. Kept apart so
that a plain matrix (no `--until-green`) compiles none of the status reading code.
"""

from __future__ import annotations

import re

DEFAULT_COMMITS = 50
DEFAULT_MAX_CALLS = 100
# The identity GitHub Actions' GITHUB_TOKEN creates statuses as (the `creator` of each one).
DEFAULT_TRUSTED = ("github-actions[bot]",)
# A pattern, compiled by `re` on first use: only --trusted-creator needs it.
_LOGIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?"


def check_login(login: str) -> str | None:
    """Why `login` cannot be a GitHub user's or app's login; None when it can."""
    if not re.fullmatch(_LOGIN, login):
        return (
            f'"{login}" is not a GitHub login (letters, digits and "-", an app\'s with '
            '"[bot]", e.g. github-actions[bot])'
        )
    return None
