"""The evidence a static proof carries in its check's detail, in one format for both sides:
written by the check that made it (`evaluate`: cuobjdump's SASS listing; `isa`: the ISA's
instructions in torch's own code), read back by the publish policy, which counts no `static`
check without it (issue 29: a record of `sass: static` with no listing was once published).
Pure.

A record is a file anyone who can write the results folder can write: the evidence keeps a
hand-made or truncated record from passing for a proof, and it binds the proof to the
variant (the listing must name exactly its SM, the instructions exactly its ISA), but it is
not a signature.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ci_tools.build.smoke import isa_rules
from ci_tools.catalog.model import Platform

# The fewest of torch's own functions (`isa_rules.is_general`) the ISA proof must have read
# before "nothing above the ISA" means anything: with none read, nothing was checked. The
# CPU torch 2.13.0 wheel's libtorch_cpu.so (PyPI, x86_64) has 84,803 of them, as `isa.prove`
# counts; a build whose symbols name so few is not a libtorch the rules understand (stripped,
# renamed, another library). Far below any real build, far above an empty or synthetic one.
ISA_FLOOR = 1000

_SASS_ENTRY = re.compile(
    r"(?P<lib>[^\s:;]+\.so): SASS \[(?P<sass>[^\]]*)\], PTX \[(?P<ptx>[^\]]*)\]"
)
_ISA_PROVEN = re.compile(
    r"(?P<lib>[^\s:]+): (?P<seen>.*) present; nothing above (?P<isa>\S+) in torch's own code "
    r"\((?P<count>[0-9]{1,9}) functions every CPU runs\)"
)
_ISA_SEEN = re.compile(r"(?P<flag>[a-z0-9_]+) \((?P<instruction>[^()]+)\)")

Listing = Mapping[str, tuple[Sequence[str], Sequence[str]]]  # library -> (SASS, PTX)


def sass_listing(libraries: Listing) -> str:
    """'libtorch_cuda.so: SASS [sm_90], PTX []; ...', by library name."""
    return "; ".join(
        f"{name}: SASS [{', '.join(sass)}], PTX [{', '.join(ptx)}]"
        for name, (sass, ptx) in sorted(libraries.items())
    )


def not_exactly(libraries: Listing, wanted: str) -> list[str]:
    """The libraries holding other SASS than exactly `wanted`, or PTX of another arch (PTX of
    the same arch, nixpkgs' forward compatibility, adds no other GPU's code)."""
    return [
        name
        for name, (sass, ptx) in sorted(libraries.items())
        if list(sass) != [wanted] or not set(ptx) <= {wanted}
    ]


def read_sass(detail: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The listing a `sass` check's detail holds ({} when none)."""
    return {m["lib"]: (_archs(m["sass"]), _archs(m["ptx"])) for m in _SASS_ENTRY.finditer(detail)}


def sass_proves(detail: str, wanted: str) -> str | None:
    """Why a `static` sass check's detail does not prove exactly `wanted`; None when it does."""
    listing = read_sass(detail)
    if not any(name.startswith("libtorch_cuda") for name in listing):
        return "no SASS listing of a libtorch_cuda*.so (cuobjdump's, as `ci-tools test` records it)"
    wrong = not_exactly(listing, wanted)
    if wrong:
        return f"its listing holds other code than exactly {wanted} ({', '.join(wrong)})"
    return None


def isa_proven(library: str, seen: Mapping[str, str], isa: str, functions: int) -> str:
    """The detail of a held ISA proof: each feature with the instruction that showed it."""
    shown = ", ".join(f"{flag} ({seen[flag].split()[0]})" for flag in sorted(seen))
    return (
        f"{library}: {shown} present; nothing above {isa} in torch's own code ({functions} "
        "functions every CPU runs), as objdump reads it"
    )


def proven_flags(platform: Platform, cpuinfo: Sequence[str]) -> frozenset[str]:
    """The ISA's features the proof looks for: those whose instructions the rules know."""
    return frozenset(f for f in cpuinfo if f in isa_rules.known_flags(platform))


def isa_proves(detail: str, isa: str, flags: frozenset[str]) -> str | None:
    """Why an `isa-code: static` detail does not prove `isa` (features `flags`); None when
    it does: every feature seen, nothing above the ISA among at least ISA_FLOOR functions."""
    found = _ISA_PROVEN.search(detail)
    if found is None:
        return (
            "no instruction listing of libtorch_cpu.so (objdump's, as `ci-tools test` records it)"
        )
    seen = frozenset(m["flag"] for m in _ISA_SEEN.finditer(found["seen"]))
    if found["isa"] != isa or seen != flags:
        return f"its listing proves {found['isa']} ({', '.join(sorted(seen))}), not {isa}"
    count = int(found["count"])
    if count < ISA_FLOOR:
        return f"it read {count} of torch's own functions, fewer than {ISA_FLOOR}: it cannot tell"
    return None


def _archs(text: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in text.split(",") if a.strip())
