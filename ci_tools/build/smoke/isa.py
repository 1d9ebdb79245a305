"""The static proof of a build's CPU ISA, read from libtorch_cpu.so with binutils' objdump:

* present: every feature of the ISA (catalog `isas.*.cpuinfo`) has one of its signature
  instructions somewhere in the library (vdpbf16ps for avx512_bf16, vpdpbusd for
  avx512_vnni, zmm registers for avx512f, SVE2's for sve2): the build kept its ISA flags;
* nothing above: torch's own code that every CPU runs (`isa_rules.is_general`) holds no
  instruction of a feature the ISA lacks. An avx2 build carrying AVX-512 code there dies of
  SIGILL on an AVX2 CPU; AVX-512 kernels its libraries select at run time by CPUID do not.

Nothing of the build runs: objdump reads the file. The library's symbol table (`nm`) says
where each function lies, so that only torch's own code is disassembled for the second
proof, in parallel spans, and the search for the first stops once each feature is seen.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools.base import proc
from ci_tools.build.smoke import evidence, isa_rules
from ci_tools.catalog.model import Platform

OBJDUMP_TIMEOUT = 1800.0
NM_TIMEOUT = 300.0
_PREFIXES = frozenset(
    {"lock", "rep", "repz", "repnz", "repe", "repne", "data16", "addr32", "notrack", "bnd"}
    | {"cs", "ds", "es", "fs", "gs", "ss", "{evex}", "{disp32}", "{disp8}", "rex", "rex.W"}
)
_X86_FIRST = frozenset("vktls{")


@dataclass(frozen=True, kw_only=True)
class Span:
    start: int
    stop: int


@dataclass(frozen=True, kw_only=True)
class Hit:
    flag: str
    instruction: str
    function: str


# Instructions above the ISA kept as examples, per feature; the rest are only counted (5
# million lines of objdump above the ISA once held a gigabyte).
EXAMPLES = 5


class _Enough(Exception):
    """Every feature looked for has been seen: stop reading this span."""


@dataclass
class Findings:
    """What a scan saw: the first instruction of each feature anywhere, and the instructions
    above the ISA in torch's own code: how many of each feature, and the first `EXAMPLES`."""

    first: dict[str, Hit] = field(default_factory=dict)
    above: dict[str, list[Hit]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    general: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Parser:
    """Reads one span of `objdump -d` output line by line."""

    def __init__(
        self,
        platform: Platform,
        allowed: frozenset[str],
        findings: Findings,
        wanted: frozenset[str] | None,
    ) -> None:
        self.platform = platform
        self.allowed = allowed
        self.findings = findings
        self.wanted = wanted  # stop when all seen; None: read the span whole
        self.function = ""
        self.general = False
        self.cache: dict[tuple[str, str], frozenset[str]] = {}

    def feed(self, line: str) -> None:
        if line.endswith(">:") and " <" in line:
            self.function = line[line.index(" <") + 2 : -2]
            self.general = isa_rules.is_general(self.function)
            if self.general:
                with self.findings.lock:
                    self.findings.general.add(self.function)
            return
        tab = line.find(":\t")
        if tab < 0:
            return
        mnemonic, operands = _split(line[tab + 2 :])
        if not mnemonic or (
            self.platform is Platform.X86_64_LINUX and mnemonic[0] not in _X86_FIRST
        ):
            return
        flags = self._needs(mnemonic, operands)
        if flags:
            self._record(flags, mnemonic, operands)

    def _needs(self, mnemonic: str, operands: str) -> frozenset[str]:
        key = (mnemonic, _shape(self.platform, operands))
        found = self.cache.get(key)
        if found is None:
            found = isa_rules.needs(self.platform, mnemonic, operands)
            self.cache[key] = found
        return found

    def _record(self, flags: frozenset[str], mnemonic: str, operands: str) -> None:
        shown = f"{mnemonic} {operands}".strip()
        with self.findings.lock:
            for flag in flags:
                hit = Hit(flag=flag, instruction=shown, function=self.function)
                self.findings.first.setdefault(flag, hit)
                if self.general and flag not in self.allowed:
                    counts = self.findings.counts
                    counts[flag] = counts.get(flag, 0) + 1
                    examples = self.findings.above.setdefault(flag, [])
                    if len(examples) < EXAMPLES:
                        examples.append(hit)
            if self.wanted is not None and self.wanted <= self.findings.first.keys():
                raise _Enough


def _split(text: str) -> tuple[str, str]:
    """'lock cmpxchg %ecx,(%rdx)' -> ('cmpxchg', '%ecx,(%rdx)'); `{vex}` stays a prefix;
    objdump's comments (`# 0x..`) and symbol references (`<sym>`) are dropped."""
    for mark in ("#", "<"):
        cut = text.find(mark)
        if cut >= 0:
            text = text[:cut]
    parts = text.split()
    while parts and parts[0] in _PREFIXES:
        parts.pop(0)
    if not parts:
        return "", ""
    if parts[0] == "{vex}" and len(parts) > 1:
        return f"{{vex}} {parts[1]}", " ".join(parts[2:])
    return parts[0], " ".join(parts[1:])


def _shape(platform: Platform, operands: str) -> str:
    """What of the operands the rules look at, so that their verdict can be remembered."""
    if platform is not Platform.X86_64_LINUX:
        return operands
    marks = [
        "z" if "%zmm" in operands else "",
        "y" if "%ymm" in operands else "",
        "x" if "%xmm" in operands else "",
        "k" if "%k" in operands else "",
        "h" if isa_rules.HIGH_XY.search(operands) else "",
    ]
    return "".join(marks)


# --- running nm and objdump --------------------------------------------------------------


def functions(library: Path, nm: str, env: Mapping[str, str]) -> list[tuple[int, int, str]]:
    """(start, stop, name) of every function `nm` lists, by address; the dynamic symbols
    where the library has no symbol table. nm's listing of libtorch_cpu.so is larger than a
    captured output may be: it is read line by line, keeping only the functions."""
    for extra in ([], ["-D"]):
        found: list[tuple[int, int, str]] = []

        def add(line: str, found: list[tuple[int, int, str]] = found) -> None:
            parts = line.split()
            if len(parts) != 4 or parts[2] not in ("t", "T", "w", "W", "i"):
                return
            try:
                start, size = int(parts[0], 16), int(parts[1], 16)
            except ValueError:  # not nm's hex: no function to read
                return
            if size:
                found.append((start, start + size, parts[3]))

        proc.stream(
            [nm, *extra, "-S", "--defined-only", str(library)],
            on_line=add,
            env=env,
            timeout=NM_TIMEOUT,
            keep_lines=3,
        )
        if found:
            return sorted(found)
    return []


# objdump spends about as long loading the library's symbols as disassembling 2-3 MB of
# code: closer ranges are read as one span.
MERGE_GAP = 1 << 20


def spans(ranges: Iterable[tuple[int, int]], gap: int = MERGE_GAP) -> list[Span]:
    """`ranges` merged into spans wherever less than `gap` bytes lie between them."""
    merged: list[list[int]] = []
    for start, stop in sorted(ranges):
        if merged and start - merged[-1][1] < gap:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    return [Span(start=a, stop=b) for a, b in merged]


def disassemble(
    library: Path,
    chosen: Sequence[Span],
    parsers: Sequence[_Parser],
    objdump: str,
    env: Mapping[str, str],
) -> list[str]:
    """objdump each span into its parser, in parallel; the errors of spans that failed."""

    def one(span: Span, parser: _Parser) -> str | None:
        argv = [
            objdump,
            "-d",
            "--no-show-raw-insn",
            f"--start-address={span.start:#x}",
            f"--stop-address={span.stop:#x}",
            str(library),
        ]
        try:
            result = proc.stream(
                argv, on_line=parser.feed, env=env, timeout=OBJDUMP_TIMEOUT, keep_lines=3
            )
        except _Enough:
            return None
        if not result.ok:
            said = result.stdout.strip().splitlines()[-1:] or ["no output"]
            return f"objdump failed on {library.name} ({said[0]})"
        return None

    workers = max(1, min(len(chosen), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        errors = list(pool.map(one, chosen, parsers))
    return [e for e in errors if e]


# --- the proof ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Verdict:
    ok: bool
    detail: str
    # The scan read too little of torch's own code to tell (`evidence.ISA_FLOOR`): not a
    # failure of the build, and no proof of it either.
    cannot_tell: bool = False


@dataclass(frozen=True, kw_only=True)
class Target:
    """What the library must prove: the ISA's name, platform and /proc/cpuinfo features."""

    isa: str
    platform: Platform
    cpuinfo: tuple[str, ...]


def prove(
    library: Path,
    target: Target,
    *,
    objdump: str,
    nm: str,
    env: Mapping[str, str],
    select: Callable[[str], bool] | None = None,
    floor: int = evidence.ISA_FLOOR,
) -> Verdict:
    """Present and nothing above (module docstring); the detail names the evidence.
    `select` keeps only the functions whose name it accepts (a part of a library, which
    needs a `floor` of its own: fewer of torch's functions read than it cannot tell)."""
    fns = [f for f in functions(library, nm, env) if select is None or select(f[2])]
    if not fns:
        return Verdict(
            ok=False,
            detail=f"{library.name} has no symbols: nothing tells its own code from the "
            "kernels its libraries select at run time",
        )
    allowed = isa_rules.with_implied(target.cpuinfo)
    wanted = evidence.proven_flags(target.platform, target.cpuinfo)
    findings = Findings()
    general = spans((a, b) for a, b, name in fns if isa_rules.is_general(name))
    errors = _scan(library, general, target, allowed, findings, None, objdump, env)
    batch = os.cpu_count() or 1
    for chosen in _search_order(fns, wanted - findings.first.keys()):
        if errors or wanted <= findings.first.keys():
            break
        for start in range(0, len(chosen), batch):
            errors += _scan(
                library,
                chosen[start : start + batch],
                target,
                allowed,
                findings,
                wanted,
                objdump,
                env,
            )
            if errors or wanted <= findings.first.keys():
                break
    if errors:
        return Verdict(ok=False, detail="; ".join(dict.fromkeys(errors)))
    return _judge(library, target, wanted, findings, floor)


def _scan(
    library: Path,
    chosen: Sequence[Span],
    target: Target,
    allowed: frozenset[str],
    findings: Findings,
    wanted: frozenset[str] | None,
    objdump: str,
    env: Mapping[str, str],
) -> list[str]:
    parsers = [_Parser(target.platform, allowed, findings, wanted) for _ in chosen]
    return disassemble(library, chosen, parsers, objdump, env)


def _search_order(fns: Sequence[tuple[int, int, str]], missing: frozenset[str]) -> list[list[Span]]:
    """Where to look for the features not yet seen, beyond torch's own code (read first):
    the functions named like them, densest spans first, then every other function."""
    if not missing:
        return []
    words = re.compile("|".join(isa_rules.hint(flag) for flag in sorted(missing)))
    rest = [(a, b, name) for a, b, name in fns if not isa_rules.is_general(name)]
    named = [(a, b) for a, b, name in rest if words.search(name)]
    first = spans(named)
    starts = [span.start for span in first]
    size = [0] * len(first)
    for start, stop in named:
        size[bisect.bisect_right(starts, start) - 1] += stop - start
    order = sorted(range(len(first)), key=lambda i: -size[i] / max(1, first[i].stop - starts[i]))
    others = spans((a, b) for a, b, name in rest if not words.search(name))
    return [[first[i] for i in order], others]


def _judge(
    library: Path, target: Target, wanted: frozenset[str], findings: Findings, floor: int
) -> Verdict:
    missing = sorted(wanted - findings.first.keys())
    general = len(findings.general)
    if missing:
        return Verdict(
            ok=False,
            detail=f"{library.name}: no {', '.join(missing)} instruction anywhere: the "
            f"{target.isa} build lost its ISA's code",
        )
    if findings.above:
        flag, hits = sorted(findings.above.items())[0]
        others = sum(findings.counts.values()) - 1
        return Verdict(
            ok=False,
            detail=f"{library.name}: {hits[0].function} holds {hits[0].instruction} "
            f"({flag}), which {target.isa} CPUs lack"
            + (f", and {others} more instructions above {target.isa}" if others else "")
            + f" in torch's own code ({general} functions every CPU runs): SIGILL there",
        )
    if general < floor:
        return Verdict(
            ok=False,
            cannot_tell=True,
            detail=f"{library.name}: cannot tell: only {general} of torch's own functions "
            f"found (fewer than {floor}), so that no instruction above "
            f"{target.isa} among them proves nothing",
        )
    seen = {flag: findings.first[flag].instruction for flag in wanted}
    return Verdict(ok=True, detail=evidence.isa_proven(library.name, seen, target.isa, general))
