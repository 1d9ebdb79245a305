"""choices: the page's questions as plain facts, from the shipped catalog."""

from __future__ import annotations

import pytest

from ci_tools.catalog.model import Catalog, Platform
from ci_tools.host import candidates
from ci_tools.page import choices

X86, ARM = Platform.X86_64_LINUX, Platform.AARCH64_LINUX


def test_fit_sets_are_every_set_a_cpu_can_have(catalog: Catalog) -> None:
    x86 = {c.key for c in choices.fit_sets(catalog, X86)}
    # bf16 or vnni imply avx512's flags; avx, avx2 and avx512 are independent of each other.
    assert len(x86) == 20
    assert "avx512bf16" not in x86 and "avx512+avx512bf16" in x86
    assert {c.key for c in choices.fit_sets(catalog, ARM)} == {
        "none",
        "armv8_2",
        "armv9",
        "armv8_2+armv9",
    }


def test_canonical_flags_give_their_fit_set_back(catalog: Catalog) -> None:
    for platform in (X86, ARM):
        isas = choices.platform_isas(catalog, platform)
        for cpu in choices.fit_sets(catalog, platform):
            back = choices.fit_key(i.name for i in choices.fits(isas, cpu.flags))
            assert back == cpu.key


def test_named_classes(catalog: Catalog) -> None:
    named = {c.key: c.label for c in choices.named_classes(catalog, X86)}
    assert list(named) == [
        "avx",
        "avx+avx2",
        "avx+avx2+avx512",
        "avx+avx2+avx512+avx512bf16",
        "avx+avx2+avx512+avx512vnni",
        "avx+avx2+avx512+avx512bf16+avx512vnni",
    ]
    assert named["avx+avx2+avx512+avx512bf16+avx512vnni"] == "AVX-512 with BF16 + AVX-512 with VNNI"
    # The CPU every CPU of the platform runs (issue 30 item 4: was the highest, AVX-512).
    assert choices.default_class(catalog, X86) == "avx"
    assert choices.default_class(catalog, ARM) == "armv8_2"


@pytest.mark.parametrize(
    ("driver", "klass"),
    [
        (None, 0),
        ("535.1", 1),
        ("569.99", 1),
        ("570", 2),
        ("574.9.9", 2),
        ("575.57.08", 3),
        ("580.65.06", 4),
        ("610", 4),
    ],
)
def test_driver_classes(catalog: Catalog, driver: str | None, klass: int) -> None:
    thresholds = choices.driver_thresholds(catalog)
    assert thresholds == (570, 575, 580)
    assert choices.driver_class(driver, thresholds) == klass
    # Each class's representative falls in its class.
    reps = choices.driver_representatives(thresholds)
    assert [choices.driver_class(r, thresholds) for r in reps] == [0, 1, 2, 3, 4]


def test_unknown_capabilities(catalog: Catalog) -> None:
    known = choices.known_capabilities(catalog)
    assert (known[0], known[-1]) == ("6.1", "12.1")
    reps = choices.cc_representatives(known, repr(catalog))
    assert {k: choices.unknown_cc_class(v, known) for k, v in reps.items()} == {
        k: k for k in choices.UNKNOWN_CC
    }
    assert [choices.unknown_cc_class(c, known) for c in ("5.2", "7.0", "13.0")] == list(
        choices.UNKNOWN_CC
    )
    with pytest.raises(ValueError, match=r"holds 0\.77"):
        choices.cc_representatives(known, "a catalog that says 0.77 somewhere")


def test_why_an_option_leads_nowhere(catalog: Catalog) -> None:
    built = candidates.Built.of(catalog)
    machines = {m.id: m for m in choices.machines()}

    def why(branch: str, machine: str, sm: str) -> str | None:
        gpu = catalog.gpus[sm]
        return choices.unavailable(catalog, built, branch, machines[machine], gpu, "pytorch")

    assert why("main", "x86_64", "sm90") is None
    assert why("cuda-13_0", "x86_64", "sm61") == "sm61 needs CUDA <= 12.9; cuda-13_0 has 13.0"
    assert why("main", "aarch64", "sm121") == "sm121 needs CUDA >= 12.9; main has 12.8"
    assert why("cuda-13_0", "x86_64", "sm110") == "sm110 builds are for aarch64-linux only"
    assert why("main", "x86_64", "sm75") == "main builds no sm75 pytorch"
    assert why("main", "arm64-darwin", "sm90") == "macOS builds use Metal (MPS), not CUDA"
