"""Publish uploads the tested bytes or fails: the store path `flox publish` uploaded must be
the one the build recorded and the test leg tested, with the same NAR hash.

`flox publish` builds again in a clean clone of the pushed commit and uploads what that build
produced (flox-publish(1), "Publishing process"). The same derivation gives the same store
path, and a path already valid in the store is never rebuilt, so the first guard is before
flox runs: the tested path must be in this runner's store with the NAR hash its build
recorded (`before_upload`); flox then uploads those bytes.

The second is after: ci-tools runs flox with a log filter under which it names every path it
uploads in a plain log line, on a pipe as on a terminal (ship/floxlog.py). Each path named
must be a tested output with its recorded NAR hash, and a record with outputs whose publish
named no upload is refused too (`refusal`): a clean clone that built another derivation (an
input the build leg had and the clone lacks) can no longer pass unseen.
"""

from __future__ import annotations

from collections.abc import Callable

from ci_tools.build.results import ResultRecord


def before_upload(record: ResultRecord, nar_hash_here: Callable[[str], str | None]) -> str | None:
    """Why this runner must not publish (None: it may): the record names no tested bytes, the
    tested path is not in its store, or is there with other bytes. flox publish then finds the path valid and uploads it as it
    is, so only the tested bytes can go."""
    build = record.build
    if build is None or not build.outputs:
        # Nothing says which bytes were tested (a record of an older ci-tools, or a build
        # whose store paths Nix could not describe): nothing could bind the upload to them.
        return (
            "its build record carries no NAR hash (an older ci-tools, or `nix path-info` "
            "failed on the build runner), so nothing binds the upload to the tested bytes: "
            "build and test it again"
        )
    for output in build.outputs:
        here = nar_hash_here(output.store_path)
        if here is None:
            return (
                f"the tested {output.store_path} is not in this runner's store: flox publish "
                "would build and upload other bytes; publish where it was tested"
            )
        if here != output.nar_hash:
            return (
                f"the tested {output.store_path} has NAR hash {here} here, its build recorded "
                f"{output.nar_hash}"
            )
    return None


def refusal(
    record: ResultRecord,
    uploaded: tuple[str, ...],
    nar_hash_here: Callable[[str], str | None],
    declined: str | None = None,
) -> str | None:
    """Why what `flox publish` uploaded is not what was tested; None when it is. `uploaded`:
    the paths flox named (floxlog.uploaded_paths), `declined`: its reason for uploading
    nothing, if it gave one. `nar_hash_here` says a path's NAR hash in this runner's store
    (None: not there, or not a store path)."""
    build = record.build
    if build is None or not build.outputs:
        return None  # an older record carries no NAR hash: the caller warns it is unbound
    tested = ", ".join(o.store_path for o in build.outputs)
    if not uploaded and declined is not None:
        return (
            f"flox publish uploaded nothing ({declined}): nothing binds what it published "
            f"to the tested {tested}"
        )
    if not uploaded:
        # floxlog.FLOX_LOG_FILTER makes flox name every upload: silence is no proof.
        return (
            f"flox publish named no uploaded path, so nothing binds the upload to the tested "
            f'{tested} (a flox without the debug event "Uploading store path to cache", '
            "or a RUST_LOG that hid it)"
        )
    for path in uploaded:
        recorded = build.output(path)
        if recorded is None:
            return (
                f"flox publish uploaded {path}, not the tested {tested}: the clean clone's "
                "derivation differs from the build's (an untracked or changed input)"
            )
        here = nar_hash_here(path)
        if here != recorded.nar_hash:
            return (
                f"flox publish uploaded {path} with NAR hash {here or 'unknown'}, the tested "
                f"build has {recorded.nar_hash}: a rebuild gave other bytes"
            )
    return None
