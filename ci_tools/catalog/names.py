"""Variant names (DESIGN §2.4): the one place that spells and parses them.

GPU    {pkg}-python{PY}-cuda{MAJ}_{MIN}-sm{N}-{isa}   pytorch-python313-cuda12_9-sm90-avx512
CPU    {pkg}-python{PY}-cpu-{isa}                      torchvision-python313-cpu-avx2
Apple  {pkg}-python{PY}-darwin-mps                     pytorch-python313-darwin-mps
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ci_tools.catalog.model import Kind, Platform

# Python 3.8 and later: `python39` is 3.9, `python313` 3.13; `python31` is no Python
# (3.1 long predates PyTorch), not 3.1.
_NAME = re.compile(
    r"(?P<package>[a-z][a-z0-9]*)-python(?P<py>3(?:[89]|[1-9]\d))-"
    r"(?:cuda(?P<cuda>\d+_\d+)-(?P<sm>sm\d+)-(?P<gisa>[a-z0-9_]+)"
    r"|cpu-(?P<cisa>[a-z0-9_]+)"
    r"|(?P<darwin>darwin-mps))"
)

_ARM_ISA = re.compile(r"armv\d")


def python_tag(python: str) -> str:
    """'3.13' -> 'python313'."""
    return "python" + python.replace(".", "")


def python_from_tag(digits: str) -> str:
    """'313' -> '3.13'."""
    return f"{digits[0]}.{digits[1:]}"


def gpu_name(package: str, python: str, cuda_tag: str, sm: str, isa: str) -> str:
    return f"{package}-{python_tag(python)}-cuda{cuda_tag}-{sm}-{isa}"


def cpu_name(package: str, python: str, isa: str) -> str:
    return f"{package}-{python_tag(python)}-cpu-{isa}"


def darwin_name(package: str, python: str) -> str:
    return f"{package}-{python_tag(python)}-darwin-mps"


@dataclass(frozen=True, kw_only=True)
class ParsedName:
    """What a variant name says by itself, without a catalog."""

    name: str
    package: str
    python: str
    kind: Kind
    cuda: str | None  # "12.9"
    sm: str | None  # "sm90"
    isa: str | None

    @property
    def suffix(self) -> str:
        """The part after the package: the key shared by one stack's variants."""
        return self.name.removeprefix(self.package + "-")

    @property
    def platform(self) -> Platform:
        if self.kind is Kind.DARWIN:
            return Platform.AARCH64_DARWIN
        assert self.isa is not None
        return Platform.AARCH64_LINUX if _ARM_ISA.match(self.isa) else Platform.X86_64_LINUX


GRAMMAR = (
    "<pkg>-python<PY>-cuda<X>_<Y>-sm<N>-<isa>, <pkg>-python<PY>-cpu-<isa> or "
    "<pkg>-python<PY>-darwin-mps"
)

# Spellings seen in real build repositories, and the grammar's spelling of each.
_RESPELLINGS = (
    (re.compile(r"armv8\.2"), "armv8_2"),
    (re.compile(r"-py(3\d+)-"), r"-python\1-"),
    (re.compile(r"-(python3\d+)-mps$"), r"-\1-darwin-mps"),
    (re.compile(r"-cuda(\d+)\.(\d+)-"), r"-cuda\1_\2-"),
)


def respell(name: str) -> str | None:
    """The grammar's spelling of a name written another known way; None if there is none."""
    fixed = name
    for pattern, replacement in _RESPELLINGS:
        fixed = pattern.sub(replacement, fixed)
    return fixed if fixed != name and parse_name(fixed) is not None else None


def parse_name(name: str) -> ParsedName | None:
    """Parse a variant name; None if it does not follow the grammar."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    python = python_from_tag(match["py"])
    if match["darwin"]:
        return ParsedName(
            name=name,
            package=match["package"],
            python=python,
            kind=Kind.DARWIN,
            cuda=None,
            sm=None,
            isa=None,
        )
    if match["cisa"]:
        return ParsedName(
            name=name,
            package=match["package"],
            python=python,
            kind=Kind.CPU,
            cuda=None,
            sm=None,
            isa=match["cisa"],
        )
    return ParsedName(
        name=name,
        package=match["package"],
        python=python,
        kind=Kind.GPU,
        cuda=match["cuda"].replace("_", "."),
        sm=match["sm"],
        isa=match["gisa"],
    )
