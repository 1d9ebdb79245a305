"""floxhub: which failures of flox are worth a retry, and FloxHub's "already published"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ci_tools.base.retry import RetryPolicy
from ci_tools.build.results import PublishStatus
from ci_tools.ship import floxhub
from tests.ship.test_floxlog import PLAIN


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


def test_a_failure_is_quoted_however_many_debug_records_follow_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flox's debug records (kept out of what is shown) were dropped after the last 40
    lines were cut: a failure followed by 40 records was quoted as nothing."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    flox = bindir / "flox"
    records = "\n".join([PLAIN] * (floxhub.KEPT_LINES + 10))
    flox.write_text(
        f"#!/bin/sh\necho 'error: the real reason'\ncat <<'EOF'\n{records}\nEOF\nexit 1\n",
        encoding="utf-8",
    )
    flox.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    said: list[str] = []
    outcome = floxhub.publish_one(
        "acme",
        "pytorch-python313-cpu-avx2",
        cwd=tmp_path,
        policy=RetryPolicy(attempts=1),
        say=said.append,
    )
    assert outcome.status is PublishStatus.FAILED
    assert "error: the real reason" in outcome.detail
    assert "Uploading" not in outcome.detail
    assert len(said) == floxhub.KEPT_LINES + 11  # every line reached `say`
