"""Variant names: spelling and parsing are inverse for every shipped variant."""

from __future__ import annotations

import pytest

from ci_tools.catalog import nameparse, names
from ci_tools.catalog.model import Catalog, Kind, Platform
from ci_tools.catalog.variants import expand_all


def test_spelling() -> None:
    assert names.gpu_name("pytorch", "3.13", "12_9", "sm90", "avx512") == (
        "pytorch-python313-cuda12_9-sm90-avx512"
    )
    assert names.cpu_name("torchvision", "3.13", "avx2") == "torchvision-python313-cpu-avx2"
    assert names.darwin_name("pytorch", "3.11") == "pytorch-python311-darwin-mps"


def test_every_shipped_name_parses_back(catalog: Catalog) -> None:
    for variants in expand_all(catalog).values():
        for variant in variants:
            parsed = nameparse.parse_name(variant.name)
            assert parsed is not None, variant.name
            assert parsed.package == variant.package.name
            assert parsed.python == variant.python
            assert parsed.kind is variant.kind
            assert parsed.platform is variant.platform
            assert parsed.suffix == variant.suffix
            if variant.gpu is not None:
                assert parsed.sm == variant.gpu.name
                assert parsed.cuda == variant.branch.cuda_short


@pytest.mark.parametrize(
    ("name", "kind", "platform", "sm", "isa"),
    [
        (
            "torchaudio-python312-cuda13_0-sm121-armv9",
            Kind.GPU,
            Platform.AARCH64_LINUX,
            "sm121",
            "armv9",
        ),
        ("pytorch-python313-cpu-avx", Kind.CPU, Platform.X86_64_LINUX, None, "avx"),
        ("pytorch-python313-darwin-mps", Kind.DARWIN, Platform.AARCH64_DARWIN, None, None),
    ],
)
def test_parse(name: str, kind: Kind, platform: Platform, sm: str | None, isa: str | None) -> None:
    parsed = nameparse.parse_name(name)
    assert parsed is not None
    assert (parsed.kind, parsed.platform, parsed.sm, parsed.isa) == (kind, platform, sm, isa)


@pytest.mark.parametrize(
    "name",
    [
        "pytorch",
        "pytorch-python313-cpu-",
        "pytorch-python313-cuda12.9-sm90-avx2",
        "pytorch-python313-cpu-armv8.3",  # no declared alias
        "pytorch-python313-cpu-avx2-cu128",  # no declared build suffix
        "README",
        "pytorch-python313-darwin-metal",
    ],
)
def test_names_outside_the_grammar(name: str) -> None:
    assert nameparse.parse_name(name) is None


@pytest.mark.parametrize(
    ("name", "kind", "isa", "build", "suffix"),
    [
        # Upstream's published spellings (barstoolbluz/build-pytorch), as declared aliases.
        ("pytorch-python313-cpu-armv8.2", Kind.CPU, "armv8_2", None, "python313-cpu-armv8.2"),
        (
            "pytorch-python313-cuda12_8-sm121-armv9-nightly",
            Kind.GPU,
            "armv9",
            "nightly",
            "python313-cuda12_8-sm121-armv9-nightly",
        ),
        (
            "torchvision-python313-cuda13_0-sm120-avx512-magma",
            Kind.GPU,
            "avx512",
            "magma",
            "python313-cuda13_0-sm120-avx512-magma",
        ),
        ("pytorch-python313-mps", Kind.DARWIN, None, None, "python313-mps"),
    ],
)
def test_declared_aliases_keep_the_published_name(
    name: str, kind: Kind, isa: str | None, build: str | None, suffix: str
) -> None:
    parsed = nameparse.parse_name(name)
    assert parsed is not None
    assert (parsed.name, parsed.kind, parsed.isa, parsed.build) == (name, kind, isa, build)
    assert parsed.suffix == suffix  # a stack groups by the published spelling


def test_a_build_suffix_is_declared_or_refused() -> None:
    name = "pytorch-python313-cuda12_8-sm120-avx2-cu128"
    assert nameparse.parse_name(name) is None
    parsed = nameparse.parse_name(name, (*nameparse.BUILD_SUFFIXES, "cu128"))
    assert parsed is not None and parsed.build == "cu128" and parsed.isa == "avx2"
