"""Variant records and stacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.model import Catalog, Kind, Platform
from ci_tools.catalog.stacks import stacks
from ci_tools.catalog.variants import expand, find
from tests.conftest import REPO_ROOT, CliRunner


def test_gpu_variant_facts(catalog: Catalog) -> None:
    variant = find(catalog, "cuda-12_9", "pytorch-python313-cuda12_9-sm90-armv9")
    assert variant.kind is Kind.GPU
    assert variant.platform is Platform.AARCH64_LINUX
    assert variant.cuda == "12.9"
    assert variant.version == "2.9.1"
    assert variant.cudnn is True
    assert variant.python_packages == "python313Packages"
    assert variant.requires is None


def test_sm61_avx_disables_what_needs_avx2(catalog: Catalog) -> None:
    variant = find(catalog, "main", "pytorch-python313-cuda12_8-sm61-avx")
    assert variant.cudnn is False
    assert set(variant.disabled_features) == {"FBGEMM", "MKLDNN", "NNPACK"}


def test_cpu_and_darwin_have_no_cuda(catalog: Catalog) -> None:
    assert find(catalog, "main", "pytorch-python313-cpu-avx2").cuda is None
    darwin = find(catalog, "main", "pytorch-python313-darwin-mps")
    assert darwin.cuda is None
    assert darwin.platform is Platform.AARCH64_DARWIN


def test_torchvision_requires_its_sibling(catalog: Catalog) -> None:
    variant = find(catalog, "main", "torchvision-python313-cuda12_8-sm90-avx512")
    assert variant.requires == "pytorch-python313-cuda12_8-sm90-avx512"
    assert variant.version == "0.23.0"


def test_stacks_put_pytorch_first(catalog: Catalog) -> None:
    grouped = stacks(expand(catalog, "main"))
    assert len(grouped) == 45
    for stack in grouped:
        assert stack.base.package.name == "pytorch"
        assert len({v.suffix for v in stack.variants}) == 1
    sizes = sorted(len(s.variants) for s in grouped)
    assert sizes.count(1) == 1 and sizes.count(2) == 44


def test_unknown_variant_offers_closest(catalog: Catalog) -> None:
    with pytest.raises(InputError, match="closest: pytorch-python313-cuda12_8-sm90-avx512"):
        find(catalog, "main", "pytorch-python313-cuda12_8-sm90-avx521")


def test_unknown_branch_lists_known(catalog: Catalog) -> None:
    with pytest.raises(InputError, match="has main, cuda-12_9, cuda-13_0"):
        expand(catalog, "cuda-99")


UPSTREAM = REPO_ROOT / "tests" / "data" / "upstream" / "pytorch-2.10-python313.yaml"


def test_variants_know_their_toolkit_and_pin() -> None:
    catalog = load_catalog(UPSTREAM)
    variants = {v.name: v for v in expand(catalog, "pytorch-2.10-python313")}
    v131 = variants["pytorch-python313-cuda13_1-sm121-armv9"]
    assert v131.toolkit is not None and v131.toolkit.name == "cuda13_1"
    assert (v131.cuda, v131.pin[0][:7]) == ("13.1", "2017d6d")
    cpu = variants["pytorch-python313-cpu-avx"]
    assert (cpu.toolkit, cpu.cuda, cpu.pin[0][:7]) == (None, None, "6a030d5")


def test_upstream_catalog_shards_into_one_of_256(run_cli: CliRunner, tmp_path: Path) -> None:
    output = tmp_path / "github-output"
    args = ("matrix", "--catalog", str(UPSTREAM), "--branch", "pytorch-2.10-python313")
    result = run_cli(
        *args, "--github-output", "--max-shards", "1", env={"GITHUB_OUTPUT": str(output)}
    )
    assert result.returncode == 0, result.stderr
    values = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines())
    assert (values["count"], values["shards"]) == ("237", "1")
    entries = json.loads(values["matrix-0"])["include"]
    packages = sorted(p for e in entries for p in e["packages"])
    wanted = (UPSTREAM.with_suffix(".names")).read_text(encoding="utf-8").split()
    assert packages == sorted(n.removesuffix(".nix") for n in wanted)
    # Short entry names stay unique across the four toolkits (the CUDA tag tells them apart).
    assert len({e["name"] for e in entries}) == 237
    assert "py313-cuda13_1-sm90-avx512" in {e["name"] for e in entries}
