"""The catalog a repository without one gets from its recipes' names."""

from __future__ import annotations

from pathlib import Path

from ci_tools.catalog import nameparse
from ci_tools.catalog.model import Kind, Platform
from ci_tools.catalog.named import catalog_from_names
from ci_tools.catalog.settings import Settings
from ci_tools.catalog.variants import expand, find

NAMES = (
    "pytorch-python313-cuda12_8-sm90-armv8.2",
    "torchvision-python313-cuda12_8-sm90-armv8.2",
    "pytorch-python313-cuda13_0-sm121-armv9-nightly",
    "pytorch-python313-cpu-avx2",
    "pytorch-python313-mps",
    "pytorch-python312-cuda12_8-sm95-avx512",  # an SM ci-tools does not know
)


def _catalog(settings: Settings = Settings()) -> object:  # noqa: B008
    parsed = [nameparse.parse_name(n) for n in NAMES]
    assert all(parsed)
    return catalog_from_names(
        [p for p in parsed if p], branch="main", settings=settings, root=Path("/repo")
    )


def test_every_recipe_is_a_variant_under_its_published_name() -> None:
    catalog = _catalog()
    variants = {v.name: v for v in expand(catalog, "main")}  # type: ignore[arg-type]
    assert set(variants) == set(NAMES)
    arm = variants["pytorch-python313-cuda12_8-sm90-armv8.2"]
    assert arm.isa is not None and arm.gpu is not None and arm.toolkit is not None
    assert (arm.isa.name, arm.platform, arm.gpu.capability, arm.cuda) == (
        "armv8_2", Platform.AARCH64_LINUX, "9.0", "12.8",
    )  # fmt: skip
    vision = variants["torchvision-python313-cuda12_8-sm90-armv8.2"]
    assert vision.requires == "pytorch-python313-cuda12_8-sm90-armv8.2"
    nightly = variants["pytorch-python313-cuda13_0-sm121-armv9-nightly"]
    assert nightly.cuda == "13.0" and nightly.gpu is not None and nightly.gpu.name == "sm121"
    assert variants["pytorch-python313-mps"].kind is Kind.DARWIN
    unknown = variants["pytorch-python312-cuda12_8-sm95-avx512"]
    assert unknown.gpu is not None and unknown.gpu.capability == "9.5"
    assert find(catalog, "main", "pytorch-python313-cpu-avx2").version is None  # type: ignore[arg-type]


def test_versions_come_from_the_settings() -> None:
    catalog = _catalog(Settings(branches={"main": {"pytorch": "2.9.1"}}))
    variant = find(catalog, "main", "pytorch-python313-cpu-avx2")  # type: ignore[arg-type]
    assert variant.version == "2.9.1"
