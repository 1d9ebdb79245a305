"""published.py: with records, the nearest published build of each variant a release did not
publish (the same package, platform and GPU target; an instruction set no higher)."""

from __future__ import annotations

from ci_tools.catalog.model import Catalog
from ci_tools.host.candidates import every_variant
from ci_tools.page import gpu_names, published


def test_without_records_nothing_is_known(catalog: Catalog) -> None:
    assert published.publication(every_variant(catalog), {}) is None


def test_the_nearest_runs_where_the_variant_would(catalog: Catalog) -> None:
    every = every_variant(catalog)
    done = "cuda-12_9/pytorch-python313-cuda12_9-sm90-avx512"
    got = published.publication(every, {done: {"org": "acme"}})
    assert got is not None and got["published"] == [done]
    near = got["nearest"]
    assert near["main/pytorch-python313-cuda12_8-sm90-avx512"] == done
    assert near["cuda-13_0/pytorch-python313-cuda13_0-sm90-avx512bf16"] == done
    # A lower instruction set, another SM, CPU only: the published build would not run.
    assert near["cuda-12_9/pytorch-python313-cuda12_9-sm90-avx2"] is None
    assert near["cuda-12_9/pytorch-python313-cuda12_9-sm89-avx512"] is None
    assert near["main/pytorch-python313-cpu-avx512"] is None


def test_every_catalog_sm_has_nvidias_names(catalog: Catalog) -> None:
    for gpu in catalog.gpus.values():
        names = gpu_names.names(gpu.capability, gpu.hardware)
        nvidia = gpu_names.table()[gpu.capability]
        assert names[: len(nvidia)] == list(nvidia), gpu.name
        assert len(names) == len(set(names))
        for name in gpu.hardware:  # the catalog's own, or NVIDIA's spelling of it
            assert any(n == name or n.endswith(" " + name) for n in names), name
    assert "GeForce GTX 1070" in gpu_names.names("6.1", ["GTX 1070"])
    assert "GTX 1070" not in gpu_names.names("6.1", ["GTX 1070"])
