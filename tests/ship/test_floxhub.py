"""floxhub: which failures of flox are worth a retry, and FloxHub's "already published"."""

from __future__ import annotations

import pytest

from ci_tools.ship import floxhub


@pytest.mark.parametrize(
    "output",
    ["error: 502 Bad Gateway", "curl: (28) Connection timed out", "API rate limit exceeded"],
)
def test_transient_messages(output: str) -> None:
    assert floxhub.is_transient(output)


def test_compile_error_is_permanent() -> None:
    assert not floxhub.is_transient("error: builder for '/nix/store/x.drv' failed with exit code 2")


def test_already_published_is_read_from_flox_own_words() -> None:
    said = "Package already published.\n\nOriginally published: x\nSource revision: abc123\n"
    assert floxhub.already_published_rev(said) == "abc123"
    assert floxhub.already_published_rev("Package published successfully.") is None
