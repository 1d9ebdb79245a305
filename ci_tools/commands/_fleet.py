"""The runner inventory as the commands after the matrix see it: which cache the jobs share,
and where the fleet can test a variant (its route), which the publish policy judges by."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from ci_tools.build.results import Route
from ci_tools.catalog.model import Catalog
from ci_tools.catalog.variants import Variant
from ci_tools.commands import _planning
from ci_tools.plan import matrix, runners
from ci_tools.plan.runners import Inventory

# Where a build leg finds the cache's signing key: the workflow puts the secret that
# runners.yaml `cache.signing_key_secret` names into this variable of the step that pushes.
SIGNING_KEY_ENV = "CI_TOOLS_SIGNING_KEY"


add_runners_option = _planning.add_runners_option


def for_catalog(args: argparse.Namespace, catalog: Catalog, cwd: Path) -> Inventory:
    flags = {flag for isa in catalog.isas.values() for flag in isa.cpuinfo}
    return runners.find_inventory(getattr(args, "runners", None), cwd, catalog.gpus, flags)


def route(fleet: Inventory, variant: Variant) -> Route:
    """Where the fleet can test `variant`, as the matrix routes its test leg."""
    placement = runners.place(fleet, matrix.from_variant(variant))
    if placement is None:
        return Route(scope="none", reason=f"no builder pool for platform {variant.platform}")
    return Route(scope=placement.test.value, reason=placement.test_reason)


def signing_key(env: Mapping[str, str] | None = None) -> str:
    return (env if env is not None else os.environ).get(SIGNING_KEY_ENV, "")
