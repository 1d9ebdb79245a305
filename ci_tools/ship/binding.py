"""Publish uploads the tested bytes or fails: the store path `flox publish` uploaded must be
the one the build recorded and the test leg tested, with the same NAR hash.

`flox publish` builds again in a clean clone of the pushed commit and uploads what that build
produced (flox-publish(1), "Publishing process"). The same derivation gives the same store
path, and a path already valid in the store is never rebuilt, so the first guard is before
flox runs: the tested path must be in this runner's store with the NAR hash its build
recorded (`before_upload`); flox then uploads those bytes.

flox names each output only in a progress span, "Uploading '<store path>'" (flox
cli/flox-rust-sdk/src/providers/publish.rs, `upload_store_path`, `#[instrument(fields(progress
= ...))]`), which its logger draws through indicatif and filters out of its plain log lines
(cli/flox/src/utils/init/logger.rs, `FilteredFormatFields` dropping the `progress` field):
on a terminal it shows, in a CI job's piped stderr it does not. Where flox named the paths,
each must be a tested output with its recorded NAR hash (`refusal`); where it named none,
the guard before the upload is what binds them, and a clean clone whose derivation differs
from the tested one (an input the build leg had and the clone lacks) goes undetected here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ci_tools.build.results import ResultRecord

_UPLOADING = re.compile(r"Uploading '(/[^'\s]+)'")


def uploaded_paths(lines: Iterable[str]) -> tuple[str, ...]:
    """The store paths `flox publish` said it uploaded, in order, each once."""
    found = (m.group(1) for line in lines for m in _UPLOADING.finditer(line))
    return tuple(dict.fromkeys(found))


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
) -> str | None:
    """Why what was uploaded is not what was tested; None when it is. `nar_hash_here` says
    a path's NAR hash in this runner's store (None: not there, or not a store path). With no
    path named (flox's piped output names none), the tested path must still be here with its
    recorded bytes."""
    build = record.build
    if build is None or not build.outputs:
        return None  # an older record carries no NAR hash: the caller warns it is unbound
    if not uploaded:
        # flox names them only on a terminal: the tested bytes must still be here as tested.
        return before_upload(record, nar_hash_here)
    for path in uploaded:
        recorded = build.output(path)
        if recorded is None:
            tested = ", ".join(o.store_path for o in build.outputs)
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
