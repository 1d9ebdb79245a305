"""Which CPU feature each instruction needs, as objdump prints it, and which code of
libtorch_cpu.so must run on every CPU of the variant's ISA. Pure.

Features are named by their /proc/cpuinfo flag (x86 `flags`, aarch64 `Features`), as the
catalog's `isas.*.cpuinfo` names them. The instruction sets are read from Intel's Software
Developer's Manual (vol. 2, each instruction's "CPUID Feature Flag" column) and Intel's ISA
Extensions Reference (AVX512_BF16, AVX512_FP16, AMX, AVX-VNNI), and from the Arm ARM (DDI
0487, the FEAT_* of each instruction; SVE2 in DDI 0584). They are signatures, not a
decoder: enough to tell an ISA's own code from what lies above it, not every instruction.

objdump (AT&T syntax on x86) prints the mnemonic, then operands; `{vex}` marks the VEX form
of an instruction that also has an EVEX one (AVX-VNNI's `{vex} vpdpbusd` beside
AVX512_VNNI's `vpdpbusd`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ci_tools.catalog.model import Platform


@dataclass(frozen=True, kw_only=True)
class Rule:
    """An instruction needs `flag` when its mnemonic matches `mnemonic` and, if given, its
    operands match `operands`."""

    flag: str
    mnemonic: re.Pattern[str]
    operands: re.Pattern[str] | None = None


def _rule(flag: str, mnemonic: str, operands: str | None = None) -> Rule:
    return Rule(
        flag=flag,
        mnemonic=re.compile(mnemonic),
        operands=re.compile(operands) if operands is not None else None,
    )


_ZMM = r"%zmm"
_MASK = r"%k[0-7]"
_HIGH_XY = r"%[xy]mm(?:1[6-9]|2[0-9]|3[01])\b"
HIGH_XY = re.compile(_HIGH_XY)
_BW_OPS = (
    r"vp(?:add|sub|adds|subs|addus|subus|avg|abs|max[su]|min[su]|cmpeq|cmpgt|cmpu?|blendm"
    r"|testn?m|broadcast)[bw]|vp(?:mullw|mulhu?w|mulhrsw|maddubsw|maddwd|shufb|sadbw|alignr"
    r"|sllw|srlw|sraw|ermw|sllvw|srlvw|sravw|ackss(?:wb|dw)|ackus(?:wb|dw)|unpck[lh](?:bw|wd)"
    r"|movwb|movswb|movuswb|mov[sz]xbw)"
)

X86_RULES: tuple[Rule, ...] = (
    _rule("avx", r"v(?!er[rw]$)[a-z0-9]+", r"%[xy]mm"),
    _rule("avx", r"vzero(?:upper|all)"),
    _rule("avx2", r"vp(?!ermil|test|erm2f128)[a-z0-9]+", r"%ymm"),
    _rule(
        "avx2",
        r"vpbroadcast[bwdq]|vbroadcasti128|vinserti128|vextracti128|vperm2i128|vperm[dq]"
        r"|vpermps|vpmaskmov[dq]|vps[lr]lv[dq]|vpsravd|vpblendd|vp?gather[dq]p?[sd]",
    ),
    _rule("fma", r"vf(?:n?m(?:add|sub)|maddsub|msubadd)\d{3}[ps][sd]"),
    _rule("f16c", r"vcvtph2ps|vcvtps2ph"),
    _rule("avx512f", r".*", _ZMM + "|" + _MASK),
    _rule("avx512f", r"k(?:mov|and|andn|or|xor|xnor|not|ortest|shiftl|shiftr|unpck)w"),
    _rule("avx512vl", r".*", _HIGH_XY),
    _rule("avx512bw", r"vmovdqu(?:8|16)|k(?:mov|and|andn|or|xor|xnor|not|ortest|test|add)[dq]"),
    _rule("avx512bw", r"kunpck(?:wd|dq)|kshift[lr][dq]"),
    _rule("avx512bw", _BW_OPS, _ZMM),
    _rule(
        "avx512dq",
        r"k(?:mov|and|andn|or|xor|xnor|not|ortest|test|add)b|kshift[lr]b|vpmullq"
        r"|vcvtt?p[sd]2u?qq|vcvtu?qq2p[sd]|vrange[ps][sd]|vreduce[ps][sd]|vfpclass[ps][sd]"
        r"|v(?:extract|insert|broadcast)[fi](?:64x2|32x8)|vbroadcasti32x2|vpmov[dq]2m"
        r"|vpmovm2[dq]",
    ),
    _rule("avx512dq", r"v(?:and|andn|or|xor)p[sd]", _ZMM),
    _rule("avx512_bf16", r"vdpbf16ps|vcvtne2ps2bf16|vcvtneps2bf16"),
    _rule("avx512_vnni", r"vpdp(?:bu|ws)sds?"),
    _rule(
        "avx512_fp16",
        r"v(?:add|sub|mul|div|max|min|sqrt|rcp|rsqrt|getexp|getmant|reduce|rndscale|scalef"
        r"|fpclass|cmp|comi|ucomi|fc?maddc|fc?mulc|f(?:n?m(?:add|sub)|maddsub|msubadd)\d{3})"
        r"(?:ph|sh)|vmov(?:sh|w)|vcvt(?!ph2ps$|ps2ph$)[a-z0-9]*(?:ph|sh)[a-z0-9]*",
    ),
    _rule("avx512vbmi", r"vpermb|vpermi2b|vpermt2b|vpmultishiftqb"),
    _rule("avx512_vpopcntdq", r"vpopcnt[dq]"),
    _rule("avx512_bitalg", r"vpopcnt[bw]|vpshufbitqmb"),
    _rule("amx_tile", r"ldtilecfg|sttilecfg|tileloaddt?1?|tilestored|tilezero|tilerelease"),
    _rule("amx_bf16", r"tdpbf16ps"),
    _rule("amx_int8", r"tdpb(?:ss|su|us|uu)d"),
    _rule("amx_fp16", r"tdpfp16ps"),
)

# The VEX forms of VNNI and BF16 conversion: other flags than their EVEX namesakes.
X86_VEX_RULES: tuple[Rule, ...] = (
    _rule("avx_vnni", r"vpdp(?:bu|ws)sds?"),
    _rule("avx_ne_convert", r"vcvtneps2bf16|vbcstnes[hb]2ps|vcvtnee[bh]f162ps|vcvtneo[bh]f162ps"),
)

_Z = r"\bz(?:[0-9]|[12][0-9]|3[01])(?:\.[bhsdq]|\[|\b)"
_P = r"\bp(?:[0-9]|1[0-5])(?:/[zm]|\.[bhsd])"

AARCH64_RULES: tuple[Rule, ...] = (
    _rule("sve", r".*", _Z + "|" + _P),
    _rule("sve", r"ptrue|ptrues|pfalse|whilel[eot]|whileh[is]|ptest|rdvl|addvl|addpl|cnt[bhwd]"),
    _rule(
        "sve2",
        r"[su](?:ml[as]l|mull|addl|subl|abal|abdl|addw|subw|shll)[bt]|sqdml[as]l[bt]"
        r"|sqdmull[bt]|r?(?:add|sub)hn[bt]|s?q(?:xt|xtu)n[bt]|u?qxtn[bt]|s?q?r?shrn[bt]"
        r"|histcnt|histseg|n?match|whilerw|whilewr|bdep|bext|bgrp|adcl[bt]|sbcl[bt]|cdot"
        r"|sqrdcmlah|bsl[12]n|nbsl",
    ),
    _rule("sve2", r"eor3|bcax|xar|tbx|cmla|sqrdml[as]h", _Z),
    _rule("asimddp", r"[su]dot", r"\bv\d+\.[24]s"),
    _rule("fphp", r"f(?!cvt)[a-z0-9]*", r"\bh\d+\b"),
    _rule("asimdhp", r"f(?!cvt)[a-z0-9]*", r"\bv\d+\.[48]h\b"),
)

# What a CPU with one feature has as well, so that code of those is no code "above" it:
# every x86 CPU with AVX-512F (Intel Skylake-SP on, AMD Zen 4 on) has AVX2, FMA and F16C;
# every AVX-512 extension and AMX type needs the base; FEAT_SVE requires FEAT_FP16 (Arm ARM,
# "The Scalable Vector Extension"), and SVE2 is Armv9-A, which includes Armv8.4's DotProd.
IMPLIES: dict[str, frozenset[str]] = {
    "avx2": frozenset({"avx"}),
    "avx512f": frozenset({"avx2", "avx", "fma", "f16c"}),
    "avx512dq": frozenset({"avx512f"}),
    "avx512bw": frozenset({"avx512f"}),
    "avx512vl": frozenset({"avx512f"}),
    "avx512_bf16": frozenset({"avx512f"}),
    "avx512_vnni": frozenset({"avx512f"}),
    "avx512_fp16": frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"}),
    "avx512vbmi": frozenset({"avx512f"}),
    "amx_bf16": frozenset({"amx_tile"}),
    "amx_int8": frozenset({"amx_tile"}),
    "amx_fp16": frozenset({"amx_tile"}),
    "sve": frozenset({"fphp", "asimdhp"}),
    "sve2": frozenset({"sve", "fphp", "asimdhp", "asimddp"}),
}


# Words in the names of functions likely to hold each feature's instructions: where the
# search for a signature looks first (it looks everywhere else after).
HINTS: dict[str, str] = {
    "avx": "avx|AVX|Avx",
    "avx2": "avx2|AVX2|Avx2",
    "fma": "avx2|AVX2|Avx2|fma|FMA",
    "f16c": "avx2|AVX2|Avx2|f16c|F16C|fp16|Half",
    "avx512_bf16": "bf16|BF16|avx512|AVX512|Avx512",
    "avx512_vnni": "vnni|VNNI|avx512|AVX512|Avx512",
    "sve": "sve|SVE|Sve",
    "sve2": "sve2|SVE2|sve|SVE",
    "asimddp": "dot|Dot|neon|NEON",
    "fphp": "fp16|Half|half|f16",
    "asimdhp": "fp16|Half|half|f16",
}
_AVX512_HINT = "avx512|AVX512|Avx512"


def hint(flag: str) -> str:
    return HINTS.get(flag, _AVX512_HINT if flag.startswith("avx512") else flag)


def with_implied(flags: Iterable[str]) -> frozenset[str]:
    """`flags` and everything a CPU with them has as well."""
    out: set[str] = set()
    pending = list(flags)
    while pending:
        flag = pending.pop()
        if flag not in out:
            out.add(flag)
            pending.extend(IMPLIES.get(flag, ()))
    return frozenset(out)


def known_flags(platform: Platform) -> frozenset[str]:
    rules = X86_RULES + X86_VEX_RULES if platform is Platform.X86_64_LINUX else AARCH64_RULES
    return frozenset(rule.flag for rule in rules)


def needs(platform: Platform, mnemonic: str, operands: str) -> frozenset[str]:
    """The features one instruction needs (none that this table knows: empty)."""
    if platform is Platform.X86_64_LINUX:
        rules = X86_RULES
        if mnemonic.startswith("{vex}"):
            mnemonic = mnemonic.removeprefix("{vex}").strip()
            rules = X86_VEX_RULES
    else:
        rules = AARCH64_RULES
    found = set()
    for rule in rules:
        if rule.flag in found or not rule.mnemonic.fullmatch(mnemonic):
            continue
        if rule.operands is None or rule.operands.search(operands):
            found.add(rule.flag)
    return frozenset(found)


# --- which code must run on every CPU of the ISA -------------------------------------------

# Libraries name the code they select at run time by CPUID after the ISA it needs: ATen's
# per-capability namespaces (at::native::AVX512, at::vec::AVX2, SVE256), Sleef
# (Sleef_expf16_u10avx512f), MKL (mkl_blas_avx512_*), oneDNN (jit_avx512_core_*), fbgemm
# (*Avx512*), XNNPACK (*__avx512f_*).
_DISPATCHED = re.compile(r"avx|AVX|Avx|amx|AMX|Amx|sve|SVE|Sve|sse4|SSE4")
# PyTorch compiles these namespaces once, with the build's own flags, and never selects them
# by CPUID: an instruction above the ISA there runs on every CPU that imports torch. ATen's
# kernels (at::native's anonymous namespaces and per-capability namespaces, at::vec,
# at::internal's parallel templates, at::cpu) are compiled once per capability, and code of
# one translation unit (an anonymous namespace anywhere in the name) may be such a kernel.
# Third-party code (MKL, oneDNN, fbgemm, Sleef, XNNPACK) dispatches itself and is not judged.
_GENERAL_ROOTS = frozenset({"c10", "torch", "caffe2", "at"})
_KERNEL_AT = frozenset({"vec", "internal", "cpu"})
_MANGLED = re.compile(r"_ZZ?N?[KVr]*(\d+)")


def _namespaces(symbol: str) -> tuple[str, str]:
    """The first two name components of an Itanium-mangled C++ name ('' where absent)."""
    match = _MANGLED.match(symbol)
    if match is None:
        return "", ""
    start = match.end()
    first = symbol[start : start + int(match.group(1))]
    rest = re.match(r"(\d+)", symbol[start + len(first) :])
    if rest is None:
        return first, ""
    begin = start + len(first) + len(rest.group(1))
    return first, symbol[begin : begin + int(rest.group(1))]


def is_dispatched(symbol: str) -> bool:
    """Named for the ISA it needs: selected at run time by its library."""
    return _DISPATCHED.search(symbol) is not None


def is_general(symbol: str) -> bool:
    """Code of torch's own that every CPU running the build executes (see above)."""
    if is_dispatched(symbol) or "_GLOBAL__N_" in symbol:
        return False
    first, second = _namespaces(symbol)
    if first not in _GENERAL_ROOTS:
        return False
    # at::native's operators (at::native::add_out) and its DEFAULT kernels are compiled with
    # the build's own flags; its other kernels are named or anonymous, excluded above.
    return first != "at" or second not in _KERNEL_AT
