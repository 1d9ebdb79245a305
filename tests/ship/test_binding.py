"""What flox publish uploaded against what was tested (issue 29 item 2), the judgement alone."""

from __future__ import annotations

from ci_tools.build.results import BuildOutcome, Output, ResultRecord, Status
from ci_tools.ship import binding

PATH = "/nix/store/mz8933sqf5hshfwxx58gb7152asdp4y6-pytorch-python313-cpu-avx2-2.9.1"
HASH = "sha256-/HGClOh0WbqW+4FonkXSTUnqA1WYVM12RYHshoFkrW4="
OTHER = "sha256-" + "B" * 43 + "="


def _record(outputs: tuple[Output, ...]) -> ResultRecord:
    build = BuildOutcome(status=Status.PASSED, seconds=1.0, store_path=PATH, outputs=outputs)
    return ResultRecord(
        variant="v", package="pytorch", branch="main", platform="x86_64-linux", build=build
    )


TESTED = _record((Output(store_path=PATH, nar_hash=HASH, nar_size=1),))


def test_the_tested_bytes_pass_and_others_fail() -> None:
    assert binding.refusal(TESTED, (PATH,), lambda _p: HASH) is None
    why = binding.refusal(TESTED, (PATH,), lambda _p: OTHER)
    assert why is not None and "a rebuild gave other bytes" in why
    other_path = PATH.replace("mz8933", "aaaaaa")
    why = binding.refusal(TESTED, (other_path,), lambda _p: HASH)
    assert why is not None and f"uploaded {other_path}, not the tested {PATH}" in why
    assert binding.before_upload(TESTED, lambda _p: HASH) is None
    assert "not in this runner's store" in str(binding.before_upload(TESTED, lambda _p: None))


def test_a_publish_that_named_no_upload_is_refused() -> None:
    """flox names every upload under ci-tools' log filter: silence binds nothing, even with
    the tested bytes here (the fallback this replaced let another derivation through)."""
    why = binding.refusal(TESTED, (), lambda _p: HASH)
    assert why is not None and "named no uploaded path, so nothing binds" in why
    assert PATH in why


def test_flox_s_reason_for_uploading_nothing_is_named() -> None:
    why = binding.refusal(TESTED, (), lambda _p: HASH, declined="null catalog store")
    assert why == (
        "flox publish uploaded nothing (null catalog store): nothing binds what it published "
        f"to the tested {PATH}"
    )


def test_a_record_without_nar_hashes_is_refused_before_any_upload() -> None:
    """Nothing names the tested bytes, so nothing could bind an upload to them."""
    unbound = _record(())
    why = binding.before_upload(unbound, lambda _p: HASH)
    assert why is not None and "carries no NAR hash" in why
