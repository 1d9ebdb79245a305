"""The static ISA proof (ci_tools/build/smoke/isa.py, isa_rules.py) with real binutils: small
objects assembled with `as` (x86_64, and aarch64 with Debian's binutils-aarch64-linux-gnu),
and the real libtorch_cpu.so of the CPU torch wheel installed here (AVX-512 and AVX2 kernels)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from ci_tools.build.results import Status
from ci_tools.build.smoke import evaluate, evidence, isa, isa_rules
from ci_tools.catalog.model import Platform
from tests import skips

X86 = Platform.X86_64_LINUX
ARM = Platform.AARCH64_LINUX
AVX2 = isa.Target(isa="avx2", platform=X86, cpuinfo=("avx2", "fma", "f16c"))
AVX512 = isa.Target(
    isa="avx512", platform=X86, cpuinfo=("avx512f", "avx512dq", "avx512vl", "avx512bw")
)
AVX512BF16 = isa.Target(isa="avx512bf16", platform=X86, cpuinfo=(*AVX512.cpuinfo, "avx512_bf16"))
AVX512VNNI = isa.Target(isa="avx512vnni", platform=X86, cpuinfo=(*AVX512.cpuinfo, "avx512_vnni"))
AVX = isa.Target(isa="avx", platform=X86, cpuinfo=("avx",))
ARMV8_2 = isa.Target(isa="armv8_2", platform=ARM, cpuinfo=("fphp", "asimdhp", "asimddp"))
ARMV9 = isa.Target(isa="armv9", platform=ARM, cpuinfo=("sve", "sve2"))

needs_x86_binutils = pytest.mark.skipif(
    shutil.which("as") is None or shutil.which("objdump") is None or os.uname().machine != "x86_64",
    reason="needs binutils' as and objdump on an x86_64 host",
)
needs_arm_binutils = skips.debian_tool("aarch64-linux-gnu-as", "binutils-aarch64-linux-gnu")

# --- the instruction table ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mnemonic", "operands", "flags"),
    [
        ("vaddps", "%ymm1,%ymm2,%ymm3", {"avx"}),
        ("vpaddd", "%ymm1,%ymm2,%ymm3", {"avx", "avx2"}),
        ("vpermilps", "$0x1,%ymm1,%ymm2", {"avx"}),
        ("vfmadd231ps", "%ymm1,%ymm2,%ymm3", {"avx", "fma"}),
        ("vcvtph2ps", "%xmm1,%ymm2", {"avx", "f16c"}),
        ("vaddps", "%zmm1,%zmm2,%zmm3{%k1}", {"avx512f"}),
        ("vmovdqu64", "%ymm17,%ymm18", {"avx", "avx512vl"}),
        ("vpaddw", "%zmm1,%zmm2,%zmm3", {"avx512f", "avx512bw"}),
        ("kmovd", "%k1,%eax", {"avx512f", "avx512bw"}),
        ("vpmullq", "%zmm1,%zmm2,%zmm3", {"avx512f", "avx512dq"}),
        ("vdpbf16ps", "%zmm1,%zmm2,%zmm3", {"avx512f", "avx512_bf16"}),
        ("vcvtneps2bf16", "%zmm1,%ymm2", {"avx", "avx512f", "avx512_bf16"}),
        ("vpdpbusd", "%zmm1,%zmm2,%zmm3", {"avx512f", "avx512_vnni"}),
        ("{vex} vpdpbusd", "%ymm1,%ymm2,%ymm3", {"avx_vnni"}),
        ("vaddph", "%zmm1,%zmm2,%zmm3", {"avx512f", "avx512_fp16"}),
        ("tdpbf16ps", "%tmm1,%tmm2,%tmm3", {"amx_bf16"}),
        ("mov", "%rax,%rbx", set()),
        ("verw", "%ax", set()),
    ],
)
def test_x86_instructions_need_their_features(
    mnemonic: str, operands: str, flags: set[str]
) -> None:
    assert isa_rules.needs(X86, mnemonic, operands) == flags


@pytest.mark.parametrize(
    ("mnemonic", "operands", "flags"),
    [
        ("ld1w", "{z0.s}, p0/z, [x0]", {"sve"}),
        ("smlalb", "z1.s, z2.h, z3.h", {"sve", "sve2"}),
        ("eor3", "v0.16b, v1.16b, v2.16b, v3.16b", set()),  # NEON's SHA3 EOR3, not SVE2's
        ("sdot", "v0.4s, v1.16b, v2.16b", {"asimddp"}),
        ("fadd", "v0.8h, v1.8h, v2.8h", {"asimdhp"}),
        ("fadd", "h0, h1, h2", {"fphp"}),
        ("fcvt", "s0, h1", set()),  # Armv8.0's conversion
        ("add", "x0, x1, x2", set()),
    ],
)
def test_aarch64_instructions_need_their_features(
    mnemonic: str, operands: str, flags: set[str]
) -> None:
    assert isa_rules.needs(ARM, mnemonic, operands) == flags


def test_what_a_cpu_with_a_feature_has_as_well() -> None:
    assert isa_rules.with_implied(["avx512_bf16"]) >= {"avx512f", "avx2", "avx", "fma", "f16c"}
    assert "avx512_vnni" not in isa_rules.with_implied(AVX512BF16.cpuinfo)
    assert isa_rules.with_implied(["sve2"]) >= {"sve", "asimddp", "fphp", "asimdhp"}


@pytest.mark.parametrize(
    ("symbol", "general", "dispatched"),
    [
        ("_ZN3c1015checked_convertIfdEET_T0_PKc", True, False),
        ("_ZNK5torch3jit5Graph4dumpEv", True, False),
        ("_ZN2at6native7add_outERKNS_6TensorE", True, False),
        ("_ZN2at6native6AVX51210add_kernelEv", False, True),
        ("_ZN2at3vec4AVX26vec_fnEv", False, True),
        ("_ZN2at6native12_GLOBAL__N_16kernelEv", False, False),
        (
            "_ZN3c1012function_refIFvvEE11callback_fnIZN2at6native12_GLOBAL__N_11fEvEUlvE_EEvl",
            False,
            False,
        ),
        ("_ZN2at8internal15invoke_parallelEv", False, False),
        ("Sleef_expf16_u10avx512f", False, True),
        ("mkl_blas_avx512_sgemm_kernel", False, True),
        ("_ZN6fbgemm8internal9transposeEv", False, False),
        ("_ZNSt6vectorIiSaIiEE9push_backEv", False, False),
        ("memcpy", False, False),
    ],
)
def test_which_code_every_cpu_runs(symbol: str, general: bool, dispatched: bool) -> None:
    assert isa_rules.is_general(symbol) is general
    assert isa_rules.is_dispatched(symbol) is dispatched


# --- the parser on objdump's own output -------------------------------------------------------


def test_a_disassembly_is_read_by_function() -> None:
    findings = isa.Findings()
    parser = isa._Parser(X86, isa_rules.with_implied(AVX2.cpuinfo), findings, None)
    for line in (
        "0000000000001000 <_ZN3c103fooEv>:",
        "    1000:\tvpaddd %ymm1,%ymm2,%ymm3",
        "    1004:\tvaddps %zmm1,%zmm2,%zmm3",
        "    100a:\tcall   2000 <_ZN2at6native6AVX5123barEv>",
        "",
        "0000000000002000 <_ZN2at6native6AVX5123barEv>:",
        "    2000:\tvaddps %zmm1,%zmm2,%zmm3",
        "    2006:\tlock cmpxchg %ecx,(%rdx)",
    ):
        parser.feed(line)
    assert findings.first["avx2"].function == "_ZN3c103fooEv"
    assert [h.function for h in findings.above["avx512f"]] == ["_ZN3c103fooEv"]
    assert findings.general == {"_ZN3c103fooEv"}


def test_hits_above_the_isa_are_counted_with_a_few_examples_kept() -> None:
    # 5 million objdump lines above the ISA once took 1 GB: every hit was kept (issue 29).
    findings = isa.Findings()
    parser = isa._Parser(X86, isa_rules.with_implied(AVX2.cpuinfo), findings, None)
    parser.feed("0000000000001000 <_ZN3c103fooEv>:")
    lines = 50_000
    tracemalloc.start()
    try:
        for n in range(lines):
            parser.feed(f"    {n:x}:\tvaddps %zmm1,%zmm2,%zmm3")
            parser.feed(f"    {n:x}:\tvpmullq %ymm1,%ymm2,%ymm3")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert findings.counts == {"avx512f": lines, "avx512dq": lines}
    assert all(len(hits) == isa.EXAMPLES for hits in findings.above.values())
    assert peak < 1 << 20, f"{peak} bytes for {lines} hits"
    verdict = isa._judge(Path("libtorch_cpu.so"), AVX2, frozenset(), findings, 0)
    assert not verdict.ok
    assert f"and {2 * lines - 1} more instructions above avx2" in verdict.detail


def test_spans_merge_close_ranges_only() -> None:
    got = isa.spans([(0, 10), (20, 30), (5_000_000, 5_000_010)], gap=100)
    assert got == [isa.Span(start=0, stop=30), isa.Span(start=5_000_000, stop=5_000_010)]


# --- assembled objects: x86_64 ------------------------------------------------------------


def _function(name: str, body: str) -> str:
    lines = "\n".join(f"  {line.strip()}" for line in body.strip().splitlines())
    return (
        f".globl {name}\n.type {name}, @function\n{name}:\n{lines}\n  ret\n.size {name}, .-{name}\n"
    )


GOOD_AVX2 = "vpaddd %ymm1, %ymm2, %ymm3\nvfmadd231ps %ymm1, %ymm2, %ymm3\nvcvtph2ps %xmm1, %ymm2"
AVX512_KERNEL = (
    "vaddps %zmm1, %zmm2, %zmm3{%k1}\nvpmullq %zmm1, %zmm2, %zmm3\nvpaddw %zmm1, %zmm2, %zmm3\n"
    "vmovdqu64 %ymm17, %ymm18"
)


# As many plain functions of torch's own (c10::plainN) as the proof must read before it can
# tell anything (`evidence.ISA_FLOOR`): every assembled library has them.
PLAIN = {f"_ZN3c10{len(f'plain{i}')}plain{i}Ev": "nop" for i in range(evidence.ISA_FLOOR)}


def assemble(tmp_path: Path, functions: dict[str, str], *, arm: bool = False) -> Path:
    source = tmp_path / "lib.s"
    every = {**functions, **PLAIN}
    source.write_text(".text\n" + "".join(_function(n, b) for n, b in every.items()))
    target = tmp_path / "libtorch_cpu.so"
    argv = ["aarch64-linux-gnu-as", "-march=armv9-a+sve2+fp16+dotprod"] if arm else ["as", "--64"]
    subprocess.run([*argv, str(source), "-o", str(target)], check=True)
    return target


def prove(library: Path, target: isa.Target, *, arm: bool = False) -> isa.Verdict:
    prefix = "aarch64-linux-gnu-" if arm else ""
    return isa.prove(library, target, objdump=f"{prefix}objdump", nm=f"{prefix}nm", env=os.environ)


@needs_x86_binutils
def test_an_avx2_build_with_avx512_kernels_it_selects_at_run_time_is_proven(tmp_path: Path) -> None:
    library = assemble(
        tmp_path,
        {
            "_ZN3c104mathEv": GOOD_AVX2,
            "_ZN2at6native6AVX5126kernelEv": AVX512_KERNEL,
            "_ZN2at6native12_GLOBAL__N_16kernelEv": "vaddps %zmm1, %zmm2, %zmm3",
        },
    )
    verdict = prove(library, AVX2)
    assert verdict.ok, verdict.detail
    assert "avx2 (vpaddd), f16c (vcvtph2ps), fma (vfmadd231ps) present" in verdict.detail
    assert (
        "nothing above avx2" in verdict.detail
        and f"({1 + evidence.ISA_FLOOR} functions every CPU runs)" in verdict.detail
    )


@needs_x86_binutils
def test_avx512_code_in_torchs_own_code_refuses_an_avx2_build(tmp_path: Path) -> None:
    library = assemble(
        tmp_path,
        {"_ZN3c104mathEv": GOOD_AVX2, "_ZN5torch3jit3runEv": "vaddps %zmm1, %zmm2, %zmm3"},
    )
    verdict = prove(library, AVX2)
    assert not verdict.ok
    assert "_ZN5torch3jit3runEv holds vaddps %zmm1,%zmm2,%zmm3 (avx512f), which avx2 CPUs lack" in (
        verdict.detail
    )


@needs_x86_binutils
def test_a_build_that_lost_its_flags_is_refused(tmp_path: Path) -> None:
    library = assemble(tmp_path, {"_ZN3c104mathEv": "addps %xmm1, %xmm2"})
    verdict = prove(library, AVX2)
    assert not verdict.ok
    assert "no avx2, f16c, fma instruction anywhere: the avx2 build lost its ISA's code" in (
        verdict.detail
    )


@needs_x86_binutils
def test_bf16_and_vnni_builds_need_their_own_instructions(tmp_path: Path) -> None:
    library = assemble(
        tmp_path,
        {
            "_ZN3c104mathEv": "vcvtneps2bf16 %zmm1, %ymm2",
            "_ZN2at6native6AVX5126kernelEv": AVX512_KERNEL,
        },
    )
    assert prove(library, AVX512BF16).ok
    # vcvtneps2bf16 in torch's own code is above an avx512 or avx512vnni build.
    for target in (AVX512, AVX512VNNI):
        verdict = prove(library, target)
        assert not verdict.ok
        assert "(avx512_bf16), which" in verdict.detail or "no avx512_vnni" in verdict.detail


@needs_x86_binutils
def test_vex_vnni_and_amx_are_not_avx512vnni_or_bf16(tmp_path: Path) -> None:
    library = assemble(
        tmp_path,
        {
            "_ZN3c104mathEv": "vpdpbusd %zmm1, %zmm2, %zmm3\n{vex} vpdpbusd %ymm1, %ymm2, %ymm3",
            "_ZN3c104tileEv": "tdpbf16ps %tmm1, %tmm2, %tmm3",
            "_ZN2at6native6AVX5126kernelEv": AVX512_KERNEL,
        },
    )
    verdict = prove(library, AVX512VNNI)
    assert not verdict.ok
    assert "(amx_bf16)" in verdict.detail and "and 1 more instructions" in verdict.detail


@needs_x86_binutils
def test_a_library_without_symbols_proves_nothing(tmp_path: Path) -> None:
    library = assemble(tmp_path, {"_ZN3c104mathEv": GOOD_AVX2})
    subprocess.run(["strip", "--strip-all", str(library)], check=True)
    verdict = prove(library, AVX2)
    assert not verdict.ok and "has no symbols" in verdict.detail


# Compiled by gcc, not assembled: AVX2, FMA, F16C and AVX-512 code in functions none of
# which is torch's own (plain C names, no c10/at/torch namespace).
NOT_TORCH_C = r"""
#include <immintrin.h>
__attribute__((target("avx512f"))) void add16(float *a, const float *b) {
  _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));
}
__attribute__((target("avx2,fma"))) void fma8(float *a, const float *b) {
  __m256 x = _mm256_loadu_ps(a);
  _mm256_storeu_ps(a, _mm256_fmadd_ps(x, _mm256_loadu_ps(b), x));
}
__attribute__((target("avx2"))) void add8(int *a, const int *b) {
  __m256i x = _mm256_loadu_si256((const __m256i *)a);
  _mm256_storeu_si256((__m256i *)a, _mm256_add_epi32(x, _mm256_loadu_si256((const __m256i *)b)));
}
__attribute__((target("avx,f16c"))) void half8(float *a, const unsigned short *h) {
  _mm256_storeu_ps(a, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@needs_x86_binutils
def test_a_library_with_none_of_torchs_own_code_cannot_tell(tmp_path: Path) -> None:
    """Issue 29: AVX-512 code and no function of torch's own once passed as an avx2 proof
    ("nothing above avx2 in torch's own code (0 functions every CPU runs)")."""
    source = tmp_path / "kernels.c"
    source.write_text(NOT_TORCH_C)
    library = tmp_path / "libtorch_cpu.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    verdict = prove(library, AVX2)
    assert not verdict.ok and verdict.cannot_tell, verdict.detail
    assert "cannot tell: only 0 of torch's own functions" in verdict.detail
    # `ci-tools test` records it as no proof (skipped), not as a failed build.
    status, _ = evaluate._isa({"ok": verdict.ok, "cannot_tell": True, "detail": verdict.detail})
    assert status is Status.SKIPPED


# --- assembled objects: aarch64 --------------------------------------------------------------


@needs_arm_binutils
def test_an_armv9_build_has_sve2_and_an_armv8_2_build_must_not(tmp_path: Path) -> None:
    library = assemble(
        tmp_path,
        {
            "_ZN3c104mathEv": (
                "ld1w {z0.s}, p0/z, [x0]\nsmlalb z1.s, z2.h, z3.h\nsdot v0.4s, v1.16b, v2.16b\n"
                "fadd v0.8h, v1.8h, v2.8h\nfadd h0, h1, h2"
            )
        },
        arm=True,
    )
    assert prove(library, ARMV9, arm=True).ok
    verdict = prove(library, ARMV8_2, arm=True)
    assert not verdict.ok
    assert "(sve)" in verdict.detail or "(sve2)" in verdict.detail
    assert "which armv8_2 CPUs lack" in verdict.detail


@needs_arm_binutils
def test_an_armv9_build_without_sve2_is_refused(tmp_path: Path) -> None:
    library = assemble(tmp_path, {"_ZN3c104mathEv": "ld1w {z0.s}, p0/z, [x0]"}, arm=True)
    verdict = prove(library, ARMV9, arm=True)
    assert not verdict.ok and "no sve2 instruction anywhere" in verdict.detail


# --- the real library of the CPU torch wheel -------------------------------------------------


def _wheel_library() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    library = Path(spec.origin).parent / "lib" / "libtorch_cpu.so"
    return library if library.is_file() else None


WHEEL = _wheel_library()
needs_wheel = pytest.mark.skipif(
    WHEEL is None or shutil.which("objdump") is None or os.uname().machine != "x86_64",
    reason="needs the x86_64 CPU torch wheel (pip install torch==2.13.0) and objdump",
)


@pytest.fixture(scope="module")
def wheel_functions() -> list[tuple[int, int, str]]:
    assert WHEEL is not None
    return isa.functions(WHEEL, "nm", os.environ)


def _pick(fns: list[tuple[int, int, str]], pattern: str, low: int = 200, high: int = 20000) -> str:
    """A function of moderate size whose name matches: a part of the library, read fast."""
    regex = re.compile(pattern)
    return next(
        name for start, stop, name in fns if regex.search(name) and low < stop - start < high
    )


# The wheel tests read a few chosen functions (`select`): a part of the library, with no floor
# of torch's own functions to reach (the whole library has 84,803: evidence.ISA_FLOOR).


@needs_wheel
def test_the_wheel_holds_avx512_and_avx2_kernels_it_selects_at_run_time(
    wheel_functions: list[tuple[int, int, str]],
) -> None:
    assert WHEEL is not None
    kernels = {
        _pick(wheel_functions, r"^_ZN2at6native6AVX51224fp16_dot_with_fp16_arith"),
        _pick(wheel_functions, r"^_ZN2at6native6AVX51215fp16_gemv_trans"),
        _pick(wheel_functions, r"^_ZN2at6native4AVX224fp16_dot_with_fp16_arith"),
        _pick(wheel_functions, r"^_ZN2at6native7DEFAULT24fp16_dot_with_fp16_arith"),
    }
    for target, said in ((AVX512, ""), (AVX2, "avx2 (")):
        verdict = isa.prove(
            WHEEL,
            target,
            objdump="objdump",
            nm="nm",
            env=os.environ,
            select=kernels.__contains__,
            floor=0,
        )
        assert verdict.ok and said in verdict.detail, verdict.detail


@needs_wheel
def test_the_wheel_keeps_bf16_kernels_in_mkl(wheel_functions: list[tuple[int, int, str]]) -> None:
    assert WHEEL is not None
    chosen = {_pick(wheel_functions, r"^mkl_blas_avx512_gemv_bf16bf16f32_kernel", high=20000)}
    chosen.add(_pick(wheel_functions, r"^_ZN2at6native6AVX51224fp16_dot_with_fp16_arith"))
    chosen.add(_pick(wheel_functions, r"^_ZN2at6native6AVX51215fp16_gemv_trans"))
    verdict = isa.prove(
        WHEEL,
        AVX512BF16,
        objdump="objdump",
        nm="nm",
        env=os.environ,
        select=chosen.__contains__,
        floor=0,
    )
    assert verdict.ok and "avx512_bf16 (vdpbf16ps)" in verdict.detail, verdict.detail


@needs_wheel
def test_the_wheels_own_code_needs_f16c_so_it_is_no_avx_build(
    wheel_functions: list[tuple[int, int, str]],
) -> None:
    """c10's Float8 conversion holds an F16C instruction in code every CPU runs: the wheel
    is refused as a build for AVX-only CPUs (Sandy Bridge), and proven for AVX2."""
    assert WHEEL is not None
    chosen = {
        _pick(wheel_functions, r"^_ZN3c1015checked_convertINS_11Float8_e5m2E", low=100),
        _pick(wheel_functions, r"^_ZN2at6native4AVX224fp16_dot_with_fp16_arith"),
    }
    verdict = isa.prove(
        WHEEL, AVX, objdump="objdump", nm="nm", env=os.environ, select=chosen.__contains__, floor=0
    )
    assert not verdict.ok
    assert "_ZN3c1015checked_convertINS_11Float8_e5m2E" in verdict.detail
    assert "(f16c), which avx CPUs lack" in verdict.detail
    assert isa.prove(
        WHEEL, AVX2, objdump="objdump", nm="nm", env=os.environ, select=chosen.__contains__, floor=0
    ).ok
