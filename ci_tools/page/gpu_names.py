"""The names of NVIDIA's GPUs of each compute capability, for the page's GPU list: a person
knows their card's name, rarely its SM. From a data file shipped with ci-tools
(nvidia-gpus.json, package data) that cites its source, NVIDIA's table of CUDA GPUs."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources

DATA = "nvidia-gpus.json"


@functools.cache
def table() -> Mapping[str, tuple[str, ...]]:
    """compute capability ("8.9") -> the GPUs NVIDIA lists for it."""
    text = resources.files("ci_tools.page").joinpath(DATA).read_text(encoding="utf-8")
    data = json.loads(text)
    return {cc: tuple(names) for cc, names in data["capabilities"].items()}


def names(capability: str, catalog_names: Iterable[str]) -> list[str]:
    """NVIDIA's names of the capability, then the catalog's own that none of them spells
    already ("GTX 1070" is NVIDIA's "GeForce GTX 1070")."""
    nvidia = table().get(capability, ())
    ours = [n for n in catalog_names if not any(m == n or m.endswith(" " + n) for m in nvidia)]
    return list(dict.fromkeys([*nvidia, *ours]))
