"""choice: the one variant per target, why, the variants it was chosen from, and the other
branches when none fits. tests/host/test_detect.py holds seed 001's guide case by case."""

from __future__ import annotations

from dataclasses import replace

from ci_tools.catalog.model import Catalog
from ci_tools.host import candidates, choice, hostcpu
from ci_tools.host.candidates import Fit, IsaFit
from ci_tools.host.facts import Host
from tests.conftest import DATA


def cpu(name: str) -> frozenset[str]:
    return hostcpu.parse_cpuinfo((DATA / f"cpuinfo-{name}.txt").read_text())


def _judged(catalog: Catalog, host: Host, workload: str) -> list[IsaFit]:
    isas = sorted(catalog.isas.values(), key=lambda i: (i.level, i.name))
    return [candidates.judge_isa(i, host, workload) for i in isas]


def test_choose_isa_takes_the_highest_general_level_and_hints_at_workloads(
    catalog: Catalog,
) -> None:
    isas = _judged(catalog, Host(machine="x86_64", cpu_flags=cpu("sapphire-rapids")), "general")
    chosen = choice.choose_isa(isas, "general", {"avx2", "avx512", "avx512bf16"}, "sm90 on main")
    assert chosen.isa is not None and chosen.isa.name == "avx512"
    # avx512vnni is not built here: no hint for it.
    assert chosen.notes == ("avx512bf16 not chosen: workload general (it is for bf16-training)",)


def test_choose_isa_explains_the_next_level_and_the_workload_s_own_isa(catalog: Catalog) -> None:
    isas = _judged(catalog, Host(machine="x86_64", cpu_flags=cpu("haswell")), "bf16-training")
    built = {"avx", "avx2", "avx512", "avx512bf16"}
    chosen = choice.choose_isa(isas, "bf16-training", built, "the CPU-only pytorch on main")
    assert chosen.isa is not None and chosen.isa.name == "avx2"
    assert chosen.notes == (
        "avx512 not available: needs avx512f avx512dq avx512vl avx512bw",
        "avx512bf16 not available: needs avx512f avx512dq avx512vl avx512bw avx512_bf16 "
        "(wanted for bf16-training, using avx2)",
    )


def test_choose_isa_says_what_is_not_built(catalog: Catalog) -> None:
    isas = _judged(catalog, Host(machine="x86_64", cpu_flags=cpu("zen4")), "general")
    chosen = choice.choose_isa(isas, "general", {"avx", "avx2"}, "sm61 on main")
    assert chosen.isa is not None and chosen.isa.name == "avx2"
    assert chosen.notes == ("avx512 not built for sm61 on main",)


def test_a_workload_isa_beats_a_general_one_of_its_level(catalog: Catalog) -> None:
    general = replace(catalog.isas["avx512"], name="avx512x", level=4)
    isas = [
        IsaFit(isa=general, fit=Fit.FITS),
        IsaFit(isa=catalog.isas["avx512bf16"], fit=Fit.FITS),
    ]
    chosen = choice.choose_isa(isas, "bf16-training", {"avx512x", "avx512bf16"}, "here")
    assert chosen.isa is not None and chosen.isa.name == "avx512bf16"


def test_choose_isa_without_a_fit(catalog: Catalog) -> None:
    isas = _judged(catalog, Host(machine="x86_64", cpu_flags=cpu("sandy-bridge")), "general")
    assert choice.choose_isa(isas, "general", {"avx2", "avx512"}, "here") == choice.IsaChoice(
        isa=None, notes=()
    )
    other: list[IsaFit] = [IsaFit(isa=catalog.isas["armv9"], fit=Fit.OTHER_PLATFORM)]
    assert choice.choose_isa(other, "general", {"armv9"}, "here").isa is None


def _answer(catalog: Catalog, host: Host, branch: str) -> tuple[choice.Recommendation, ...]:
    found = candidates.gather(catalog, host, package="pytorch", workload="general")
    return choice.choose(catalog, found, branch=branch)


def test_the_answer_carries_the_variants_it_was_chosen_from(catalog: Catalog) -> None:
    host = Host.described(machine="x86_64", capabilities=["6.1"], cpu_flags=cpu("haswell"))
    (rec,) = _answer(catalog, host, "main")
    assert rec.package == "pytorch-python313-cuda12_8-sm61-avx2"
    assert [(c.variant, c.fits) for c in rec.candidates] == [
        ("pytorch-python313-cuda12_8-sm61-avx", True),
        ("pytorch-python313-cuda12_8-sm61-avx2", True),
    ]


def test_a_failed_answer_says_why_not_for_each_variant(catalog: Catalog) -> None:
    host = Host.described(machine="x86_64", capabilities=["11.0"], cpu_flags=cpu("zen4"))
    (rec,) = _answer(catalog, host, "cuda-13_0")
    assert rec.package is None and rec.alternatives == ()
    assert [(c.variant, c.why_not) for c in rec.candidates] == [
        ("pytorch-python313-cuda13_0-sm110-armv8_2", "armv8_2 is for aarch64-linux machines"),
        ("pytorch-python313-cuda13_0-sm110-armv9", "armv9 is for aarch64-linux machines"),
    ]
    assert "is built only for armv8_2, armv9 (aarch64-linux)" in rec.reason


def test_a_branch_without_the_target_names_the_branches_with_one(catalog: Catalog) -> None:
    host = Host.described(machine="aarch64", capabilities=["12.1"], cpu_flags=cpu("grace"))
    (rec,) = _answer(catalog, host, "main")
    assert (rec.package, rec.candidates) == (None, ())
    assert [(a.branch, a.package) for a in rec.alternatives] == [
        ("cuda-13_0", "pytorch-python313-cuda13_0-sm121-armv9")
    ]
    assert rec.reason.endswith(
        "branches with one: cuda-13_0 (pytorch-python313-cuda13_0-sm121-armv9)"
    )


def test_one_answer_per_gpu_capability_or_one_for_the_machine(catalog: Catalog) -> None:
    gpus = Host.described(
        machine="x86_64", capabilities=["9.0", "8.6", "9.0"], cpu_flags=cpu("zen4")
    )
    assert [r.gpu.sm if r.gpu else None for r in _answer(catalog, gpus, "main")] == ["sm90", "sm86"]
    for machine in ("arm64-darwin", "ppc64le"):
        (rec,) = _answer(catalog, replace(gpus, machine=machine), "main")
        assert rec.gpu is None
    (mps,) = _answer(catalog, Host(machine="arm64-darwin"), "main")
    assert mps.package == "pytorch-python313-darwin-mps"
    assert [c.variant for c in mps.candidates] == ["pytorch-python313-darwin-mps"]
    assert mps.candidates[0].isa is None
