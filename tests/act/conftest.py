"""Fixtures the act scenario files share."""

from __future__ import annotations

import pytest

from tests.act import host_torch
from tests.act.host_torch import HostTorch


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory) -> HostTorch:
    """This machine's Python and CPU torch as a variant that passes its tests for real."""
    why = host_torch.unavailable()
    if why is not None:
        pytest.skip(f"this machine's torch cannot stand for a passing CPU variant: {why}")
    return host_torch.describe(tmp_path_factory.mktemp("host-torch") / "prebuilt.json")
