"""Reading what `flox publish` logged about its uploads (ci_tools/ship/floxlog.py): plain,
coloured and redrawn lines, the reasons it gives for uploading nothing, and what is kept out
of a log."""

from __future__ import annotations

from ci_tools.ship import floxlog

PATH = "/nix/store/" + "a" * 32 + "-pytorch-python313-cpu-avx2-2.9.1"
TARGET = "flox_rust_sdk::providers::publish"
PLAIN = (
    f"12:00:01.234 DEBUG publish:upload_store_path: {TARGET}: Uploading store path to cache "
    f"store_path={PATH} url_with_query=https://in.example/?secret-key=/k cmd=nix copy {PATH}"
)
# As flox writes it with FORCE_COLOR on a pipe: level coloured, field names italic.
COLOURED = (
    f"12:00:01.234 \x1b[34mDEBUG\x1b[0m \x1b[1mpublish:upload_store_path\x1b[0m\x1b[2m:\x1b[0m "
    f"\x1b[2m{TARGET}\x1b[0m\x1b[2m:\x1b[0m Uploading store path to cache "
    f"\x1b[3mstore_path\x1b[0m\x1b[2m=\x1b[0m{PATH} \x1b[3mcmd\x1b[0m\x1b[2m=\x1b[0mnix copy"
)
# On a terminal indicatif redraws its spinner, then clears the line for the log record.
REDRAWN = f"⠋ Uploading '{PATH}'\r\x1b[2K{PLAIN}\r"


def test_the_upload_is_read_from_plain_coloured_and_redrawn_lines() -> None:
    for line in (PLAIN, COLOURED, REDRAWN, "  " + COLOURED):
        assert floxlog.uploaded_paths([line]) == (PATH,), repr(line)
        assert floxlog.is_record(line)


def test_other_events_name_no_upload() -> None:
    output = f'12:00:01.000 DEBUG publish: {TARGET}: Uploading output... output=PackageOutput {{ name: "out", store_path: "{PATH}" }}'
    span = f"Uploading '{PATH}'"  # the progress span's text, not a log record
    message = f"Package published successfully. store_path={PATH}"
    # a build's own log line that mentions an upload is no record of flox's
    echoed = f"builder DEBUG {TARGET}: Uploading store path to cache store_path={PATH}"
    assert floxlog.uploaded_paths([output, span, message, echoed]) == ()
    assert not any(floxlog.is_record(line) for line in (span, message, echoed))


def test_each_path_once_in_order() -> None:
    second = PATH.replace("a" * 32, "b" * 32)
    lines = [PLAIN, PLAIN.replace(PATH, second), COLOURED]
    assert floxlog.uploaded_paths(lines) == (PATH, second)


def test_flox_says_why_it_uploads_nothing() -> None:
    null = f'12:00:01.000 DEBUG publish: {TARGET}: skipping artifact upload reason="null catalog store"'
    meta = (
        f"12:00:01.000 DEBUG publish: {TARGET}: collecting narinfo from local store "
        '(no artifact upload) reason="metadata-only catalog store"'
    )
    assert floxlog.declined([PLAIN, null]) == "null catalog store"
    assert floxlog.declined([meta]) == "metadata-only catalog store"
    assert floxlog.declined([PLAIN]) is None


def test_records_are_told_from_what_may_be_shown() -> None:
    lines = ["building", PLAIN, COLOURED, "Package published successfully."]
    shown = [line for line in lines if not floxlog.is_record(line)]
    assert shown == ["building", "Package published successfully."]


def test_the_filter_replaces_a_callers_rust_log() -> None:
    env = floxlog.flox_log_env({"RUST_LOG": "off", "PATH": "/bin"})
    assert env == {"RUST_LOG": floxlog.FLOX_LOG_FILTER, "PATH": "/bin"}
