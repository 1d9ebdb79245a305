"""The fuzz suite's knobs: a fixed seed, and a longer run behind a flag.

`python3 -m pytest tests/fuzz` runs the short suite (fixed seed, well under a minute).
`CI_TOOLS_FUZZ=long python3 -m pytest tests/fuzz` runs many more cases (minutes);
`CI_TOOLS_FUZZ_SEED=N` picks another seed for either (the failing case names its seed).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def fuzz_long() -> bool:
    return os.environ.get("CI_TOOLS_FUZZ") == "long"


@pytest.fixture(scope="session")
def fuzz_seed() -> int:
    return int(os.environ.get("CI_TOOLS_FUZZ_SEED", "20261122"))
