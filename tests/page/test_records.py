"""records: what the page says of a variant from its result record."""

from __future__ import annotations

from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Check, Figures, Library, Status
from ci_tools.page import records
from tests import proven
from tests.conftest import DATA


def _record(*checks: tuple[str, Status], build: Status = Status.PASSED) -> results.ResultRecord:
    return results.ResultRecord(
        variant="pytorch-python313-cuda12_9-sm90-avx512",
        package="pytorch",
        branch="cuda-12_9",
        platform="x86_64-linux",
        build=BuildOutcome(status=build, seconds=1, started_at="2026-11-20T10:00:00Z"),
        test=results.TestOutcome(
            status=results.test_status([Check(name=n, status=s) for n, s in checks]),
            checks=tuple(Check(name=n, status=s) for n, s in checks),
        ),
    )


P, F, S = Status.PASSED, Status.FAILED, Status.SKIPPED


def test_proof_says_how_far_the_record_goes() -> None:
    assert records.proof(_record(("gpu-mlp", P), ("sass", P), ("cpu-mlp", P))) == (
        "ran on a GPU of its SM; ran on a CPU with its instruction set"
    )
    assert records.proof(_record(("gpu-mlp", S), ("sass", P), ("cpu-mlp", P))) == (
        "its GPU code checked statically (SASS), not run on its GPU; ran on a CPU with its "
        "instruction set"
    )
    assert records.proof(_record(("mps", P))) == "ran on Apple Silicon (MPS)"
    assert records.proof(_record(("sass", F), ("gpu-mlp", P))) == "failed sass"
    assert records.proof(_record(("cpu-mlp", S))) == "built; every check skipped on its runner"
    assert records.proof(_record(build=Status.FAILED)) == "not built"


def test_facts_of_shipped_records() -> None:
    loaded = results.load_dir(DATA / "results-cuda-12_9")
    facts = records.by_variant(loaded, ["cuda-12_9"], proven.repo_expect_of)
    sm90 = facts["cuda-12_9/pytorch-python313-cuda12_9-sm90-avx512"]
    assert sm90["sizes"] == {
        "cuda_libraries": 402653184,
        "torch_package": None,
        "closure": 6012345678,
    }
    assert (sm90["org"], sm90["commit"], sm90["passed"]) == ("acme", "1a2b3c4d5e6f", True)
    assert records.by_variant(loaded, ["main"], proven.repo_expect_of) == {}


def test_a_record_with_every_size() -> None:
    figures = Figures(libraries=(Library(name="libtorch_cuda.so", bytes=10),), package_bytes=30)
    record = _record(("gpu-mlp", P)).with_test(results.TestOutcome(status=P, figures=figures))
    facts = records.variant_facts(record, proven.repo_expect_of(record))
    assert facts["sizes"] == {"cuda_libraries": 10, "torch_package": 30, "closure": None}
    assert facts["date"] == "2026-11-20"
    assert facts["org"] is None  # never published


def test_a_record_of_checks_ci_tools_test_does_not_make_is_not_proven() -> None:
    """Issue 29: the page says what the publish policy says of a record of made-up checks."""
    record = _record(("x", P))
    facts = records.variant_facts(record, proven.repo_expect_of(record))
    assert facts["passed"] is False
    assert facts["proven"] == ("not proven: checks not a check `ci-tools test` makes for it: x")
