"""What ci-tools knows without a catalog: the packages, CPU ISAs and GPUs it builds for.

A build repository without `catalog.yaml` names its variants by file name only; these give
each name its facts (an ISA's platform, `/proc/cpuinfo` flags and torch capability, an SM's
compute capability, family and cuDNN switch, a package's import name and base). They equal the
`packages`, `isas` and `gpus` tables of the shipped catalog.yaml (a test holds them equal).
"""

from __future__ import annotations

from collections.abc import Mapping

from ci_tools.catalog.model import Gpu, Isa, Package, Platform

PACKAGES: Mapping[str, Package] = {
    "pytorch": Package(name="pytorch", attribute="torch", import_name="torch"),
    "torchvision": Package(
        name="torchvision", attribute="torchvision", import_name="torchvision", requires="pytorch"
    ),
    "torchaudio": Package(
        name="torchaudio", attribute="torchaudio", import_name="torchaudio", requires="pytorch"
    ),
}

_X86, _ARM = Platform.X86_64_LINUX, Platform.AARCH64_LINUX
_AVX512 = ("avx512f", "avx512dq", "avx512vl", "avx512bw")
_AVX512_FLAGS = ("-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw")


def _isa(
    name: str,
    platform: Platform,
    level: int,
    description: str,
    *,
    compiler_flags: tuple[str, ...],
    cpuinfo: tuple[str, ...],
    torch_capability: str,
    hardware: str,
    disables: tuple[str, ...] = (),
    workload: str | None = None,
) -> Isa:
    return Isa(
        name=name,
        platform=platform,
        level=level,
        description=description,
        compiler_flags=compiler_flags,
        cpuinfo=cpuinfo,
        torch_capability=torch_capability,
        disables=disables,
        workload=workload,
        hardware=hardware,
    )


ISAS: Mapping[str, Isa] = {
    isa.name: isa
    for isa in (
        _isa(
            "avx", _X86, 1, "AVX",
            compiler_flags=("-mavx",), cpuinfo=("avx",), torch_capability="DEFAULT",
            disables=("FBGEMM", "MKLDNN", "NNPACK"),
            hardware="Intel Sandy Bridge+ (2011), AMD Bulldozer+ (2011)",
        ),
        _isa(
            "avx2", _X86, 2, "AVX2",
            compiler_flags=("-mavx2", "-mfma", "-mf16c"), cpuinfo=("avx2", "fma", "f16c"),
            torch_capability="AVX2", hardware="Intel Haswell+ (2013), AMD Zen 1+ (2017)",
        ),
        _isa(
            "avx512", _X86, 3, "AVX-512",
            compiler_flags=(*_AVX512_FLAGS, "-mfma"), cpuinfo=_AVX512,
            torch_capability="AVX512", hardware="Intel Skylake-X+ (2017), AMD Zen 4+ (2022)",
        ),
        _isa(
            "avx512bf16", _X86, 4, "AVX-512 with BF16",
            compiler_flags=(*_AVX512_FLAGS, "-mavx512bf16", "-mfma"),
            cpuinfo=(*_AVX512, "avx512_bf16"), torch_capability="AVX512",
            workload="bf16-training", hardware="Intel Cooper Lake+ (2020), AMD Zen 4+ (2022)",
        ),
        _isa(
            "avx512vnni", _X86, 4, "AVX-512 with VNNI",
            compiler_flags=(*_AVX512_FLAGS, "-mavx512vnni", "-mfma"),
            cpuinfo=(*_AVX512, "avx512_vnni"), torch_capability="AVX512",
            workload="int8-inference", hardware="Intel Cascade Lake+ (2019), AMD Zen 4+ (2022)",
        ),
        _isa(
            "armv8_2", _ARM, 1, "ARMv8.2-A with FP16 and dot product",
            compiler_flags=("-march=armv8.2-a+fp16+dotprod",),
            cpuinfo=("fphp", "asimdhp", "asimddp"), torch_capability="DEFAULT",
            hardware="AWS Graviton2, Graviton3 (SVE without SVE2), Neoverse N1/V1, Cortex-A75+",
        ),
        _isa(
            "armv9", _ARM, 2, "ARMv9-A with SVE2",
            compiler_flags=("-march=armv9-a+sve+sve2",), cpuinfo=("sve", "sve2"),
            torch_capability="DEFAULT", hardware="NVIDIA Grace, AWS Graviton4, Neoverse V2 (SVE2)",
        ),
    )
}  # fmt: skip

_ARM_ONLY = ("armv8_2", "armv9")

GPUS: Mapping[str, Gpu] = {
    gpu.name: gpu
    for gpu in (
        Gpu(
            name="sm61", capability="6.1", family="Pascal",
            hardware=("GTX 1070", "GTX 1080", "GTX 1080 Ti", "Tesla P40"),
            max_cuda="12.9", isas=("avx", "avx2"), cudnn=False,
        ),
        Gpu(name="sm75", capability="7.5", family="Turing",
            hardware=("Tesla T4", "RTX 2080 Ti", "Quadro RTX 8000")),
        Gpu(name="sm80", capability="8.0", family="Ampere datacenter", hardware=("A100", "A30")),
        Gpu(name="sm86", capability="8.6", family="Ampere",
            hardware=("RTX 3090", "RTX 3080 Ti", "A40", "A5000")),
        Gpu(name="sm89", capability="8.9", family="Ada Lovelace",
            hardware=("RTX 4090", "RTX 4080", "L4", "L40", "L40S")),
        Gpu(name="sm90", capability="9.0", family="Hopper", hardware=("H100", "H200")),
        Gpu(name="sm100", capability="10.0", family="Blackwell datacenter",
            hardware=("B100", "B200", "GB200"), min_cuda="12.8"),
        Gpu(name="sm103", capability="10.3", family="Blackwell datacenter", hardware=("B300",),
            min_cuda="12.9"),
        Gpu(name="sm110", capability="11.0", family="Blackwell (Thor)",
            hardware=("DRIVE Thor", "Jetson Thor"), min_cuda="13.0", isas=_ARM_ONLY),
        Gpu(name="sm120", capability="12.0", family="Blackwell", hardware=("RTX 5090",),
            min_cuda="12.8"),
        Gpu(name="sm121", capability="12.1", family="Blackwell", hardware=("DGX Spark",),
            min_cuda="12.9", isas=_ARM_ONLY),
    )
}  # fmt: skip

# cuDNN 9.12 and later refuse compute capabilities below 7.5 (nixpkgs' cudnn).
CUDNN_MIN_CAPABILITY = (7, 5)


def gpu(sm: str) -> Gpu:
    """The built-in GPU of `sm`, or one derived from the name for an SM ci-tools does not
    know: `smXY` is compute capability X.Y by NVIDIA's own naming, nothing guessed."""
    known = GPUS.get(sm)
    if known is not None:
        return known
    digits = sm.removeprefix("sm")
    major, minor = int(digits[:-1]), int(digits[-1])
    return Gpu(
        name=sm,
        capability=f"{major}.{minor}",
        family="unknown to ci-tools' built-in facts",
        hardware=(),
        cudnn=(major, minor) >= CUDNN_MIN_CAPABILITY,
    )
