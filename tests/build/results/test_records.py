"""The record types: statuses and which records a release may publish."""

from __future__ import annotations

from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, Check, Status
from tests.build.results.samples import sample_record


def test_test_status() -> None:
    passed, failed, skipped, static = (
        Check(name=s.value, status=s) for s in results.CHECK_STATUSES
    )
    assert results.test_status([passed, skipped]) is Status.PASSED
    assert results.test_status([passed, failed, skipped]) is Status.FAILED
    assert results.test_status([skipped, skipped]) is Status.SKIPPED
    assert results.test_status([static, skipped]) is Status.STATIC
    assert results.test_status([passed, static]) is Status.PASSED
    assert results.test_status([]) is Status.SKIPPED  # no checks prove nothing


def test_built_means_a_build_that_passed() -> None:
    record = sample_record()
    assert record.built
    assert not record.with_build(BuildOutcome(status=Status.FAILED, seconds=1)).built
    assert not record.with_build(BuildOutcome(status=Status.STARTED, seconds=0)).built


def test_the_three_sizes() -> None:
    figures = results.Figures(
        libraries=(
            results.Library(name="libtorch_cpu.so", bytes=400),
            results.Library(name="libtorch_cuda.so", bytes=1000),
            results.Library(name="libtorch_cuda_linalg.so", bytes=20),
        ),
        package_bytes=2000,
    )
    record = sample_record().with_test(results.TestOutcome(status=Status.PASSED, figures=figures))
    record = record.with_build(BuildOutcome(status=Status.PASSED, seconds=1, closure_bytes=9000))
    assert record.sizes == results.Sizes(cuda_libraries=1020, torch_package=2000, closure=9000)
    # A CPU build has no CUDA library; a record without figures has no sizes to give.
    cpu = results.Figures(libraries=(results.Library(name="libtorch_cpu.so", bytes=400),))
    assert cpu.cuda_library_bytes is None
    bare = results.ResultRecord(variant="v", package="pytorch", branch="main", platform="p")
    assert bare.sizes == results.Sizes(cuda_libraries=None, torch_package=None, closure=None)
