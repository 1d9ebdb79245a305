"""Parsing variant names: what a name says by itself, without a catalog.

The grammar is `names`'s; here also the spellings of the real build repository
(barstoolbluz/build-pytorch) as declared aliases of it: an ISA alias (`armv8.2` is
`armv8_2`), `-mps` for `-darwin-mps`, and a build suffix after a variant (`-nightly`,
`-magma`: another build of that variant, with its facts). Apart from `names` so that what
only spells names (every `ci-tools matrix` of a catalog) does not import it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ci_tools.catalog.model import Kind, Platform

# Python 3.8 and later: `python39` is 3.9, `python313` 3.13; `python31` is no Python
# (3.1 long predates PyTorch), not 3.1.
_NAME = re.compile(
    r"(?P<package>[a-z][a-z0-9]*)-python(?P<py>3(?:[89]|[1-9]\d))-"
    r"(?:cuda(?P<cuda>\d+_\d+)-(?P<sm>sm\d+)-(?P<gisa>[a-z0-9_.]+)"
    r"|cpu-(?P<cisa>[a-z0-9_.]+)"
    r"|(?P<darwin>darwin-mps|mps))"
    r"(?:-(?P<build>[a-z][a-z0-9]*))?"
)

# Other spellings of an ISA, as published names carry them -> the grammar's ISA.
ISA_ALIASES = {"armv8.2": "armv8_2"}
# Suffixes that mark another build of the variant before them (upstream's `-nightly` builds
# from a nightly source, `-magma` with its own MAGMA): the variant's facts, its own name.
BUILD_SUFFIXES = ("nightly", "magma")

_ARM_ISA = re.compile(r"armv\d")


def python_from_tag(digits: str) -> str:
    """'313' -> '3.13'."""
    return f"{digits[0]}.{digits[1:]}"


@dataclass(frozen=True, kw_only=True)
class ParsedName:
    """What a variant name says by itself, without a catalog."""

    name: str  # as published, aliases and all
    package: str
    python: str
    kind: Kind
    cuda: str | None  # "12.9"
    sm: str | None  # "sm90"
    isa: str | None  # the grammar's name: "armv8_2" for a name that says "armv8.2"
    build: str | None = None  # "nightly" for "...-armv9-nightly"

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

# Spellings seen in real build repositories that are no alias, and the grammar's spelling.
_RESPELLINGS = (
    (re.compile(r"-py(3\d+)-"), r"-python\1-"),
    (re.compile(r"-cuda(\d+)\.(\d+)-"), r"-cuda\1_\2-"),
)


def respell(name: str) -> str | None:
    """The grammar's spelling of a name written another known way; None if there is none."""
    fixed = name
    for pattern, replacement in _RESPELLINGS:
        fixed = pattern.sub(replacement, fixed)
    return fixed if fixed != name and parse_name(fixed) is not None else None


def parse_name(name: str, builds: Iterable[str] = BUILD_SUFFIXES) -> ParsedName | None:
    """Parse a variant name, aliases and a build suffix of `builds` included; None if it does
    not follow the grammar."""
    match = _NAME.fullmatch(name)
    if match is None or (match["build"] is not None and match["build"] not in set(builds)):
        return None
    spelled = match["gisa"] or match["cisa"]
    isa = ISA_ALIASES.get(spelled, spelled) if spelled is not None else None
    if isa is not None and "." in isa:
        return None
    kind = Kind.DARWIN if match["darwin"] else Kind.CPU if match["cisa"] else Kind.GPU
    return ParsedName(
        name=name,
        package=match["package"],
        python=python_from_tag(match["py"]),
        kind=kind,
        cuda=match["cuda"].replace("_", ".") if kind is Kind.GPU else None,
        sm=match["sm"],
        isa=isa,
        build=match["build"],
    )
