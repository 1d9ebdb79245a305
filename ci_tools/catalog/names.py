"""Variant names: the one place that spells and parses them.

GPU    {pkg}-python{PY}-cuda{MAJ}_{MIN}-sm{N}-{isa}   pytorch-python313-cuda12_9-sm90-avx512
CPU    {pkg}-python{PY}-cpu-{isa}                      torchvision-python313-cpu-avx2
Apple  {pkg}-python{PY}-darwin-mps                     pytorch-python313-darwin-mps

`generate` spells names only this way. A repository without a catalog keeps the names it
already publishes, so parsing also takes the spellings of the real build repository
(barstoolbluz/build-pytorch) as declared aliases of the grammar: an ISA alias
(`armv8.2` is `armv8_2`), `-mps` for `-darwin-mps`, and a build suffix after a variant
(`-nightly`, `-magma`: another build of that variant, with its facts): `nameparse` parses
them, apart, so that what only spells a name (every `ci-tools matrix`) does not import it.
"""

from __future__ import annotations

import json
import re

# A pattern, compiled by `re` on first use: only what names a flox package needs it.
_NIX_IDENTIFIER = r"[a-zA-Z_][a-zA-Z0-9_'-]*"


def flox_target(name: str) -> str:
    """The package `.flox/pkgs/<name>.nix` as flox lists, builds and publishes it: NEF shows
    its attribute path with nixpkgs' lib.showAttrPath, which quotes a name that is no Nix
    identifier (`pytorch-…-armv8.2` is `"pytorch-…-armv8.2"`, and its link `result-"…"`)."""
    return name if re.fullmatch(_NIX_IDENTIFIER, name) else json.dumps(name)


def python_tag(python: str) -> str:
    """'3.13' -> 'python313'."""
    return "python" + python.replace(".", "")


def gpu_name(package: str, python: str, cuda_tag: str, sm: str, isa: str) -> str:
    return f"{package}-{python_tag(python)}-cuda{cuda_tag}-{sm}-{isa}"


def cpu_name(package: str, python: str, isa: str) -> str:
    return f"{package}-{python_tag(python)}-cpu-{isa}"


def darwin_name(package: str, python: str) -> str:
    return f"{package}-{python_tag(python)}-darwin-mps"
