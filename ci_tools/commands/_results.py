"""Where build and test write their result records, and the run facts every record carries."""

from __future__ import annotations

import argparse
import contextlib
import socket
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ci_tools.base import fsutil, proc
from ci_tools.base.errors import InputError
from ci_tools.build import results
from ci_tools.build.results import ResultRecord
from ci_tools.catalog.variants import Variant

# Where build and test write result records and publish reads them, unless told otherwise.
DEFAULT_RESULTS = Path("results")


def add_record_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        metavar="DIR",
        help="write each variant's record to DIR/<variant>.result.json "
        f"(default: {DEFAULT_RESULTS}, the folder `ci-tools publish` reads)",
    )
    parser.add_argument(
        "--result-json",
        type=Path,
        metavar="PATH",
        help="also write the record of the one variant to PATH",
    )


def record_paths(args: argparse.Namespace, variant: str, count: int) -> list[Path]:
    """The files `variant`'s record goes to; `count` is how many variants the call names."""
    paths = [results.result_path(args.results, variant)]
    if args.result_json is not None:
        if count != 1:
            raise InputError("--result-json PATH takes one variant; with several use --results DIR")
        paths.append(args.result_json)
    return paths


def provenance(env: Mapping[str, str], cwd: Path) -> tuple[str | None, str]:
    """(commit, runner). The commit is `git rev-parse HEAD` of the checkout being built: the
    recipes it built, not GITHUB_SHA (the commit the workflow was dispatched for, which a
    release that checks out a planned commit does not build). None outside a git checkout."""
    commit = None
    if proc.which("git", env) is not None:
        found = proc.run(["git", "rev-parse", "HEAD"], cwd=cwd, env=env, timeout=30)
        commit = (found.stdout.strip() or None) if found.ok else None
    return commit, runner_name(env)


def runner_name(env: Mapping[str, str]) -> str:
    """The runner a step runs on: GitHub's RUNNER_NAME, else the host's name."""
    return env.get("RUNNER_NAME") or socket.gethostname()


def check_writable(paths: Sequence[Path]) -> None:
    """Refuse (exit 2) before any work when a record could not be written afterwards: an
    unwritable --results found after hours of building loses the build's record."""
    for path in paths:
        folder = path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder, prefix=".ci-tools-probe-"):
                pass
        except OSError as exc:
            raise InputError(
                f"{path}: cannot write result records in {folder}: {exc.strerror or exc}"
            ) from None
        if path.is_dir():
            raise InputError(f"{path}: is a folder, not a result record file")


# Space set aside beside each record while its build or test runs (`fsutil.reserve_space`):
# a record with its log tail is tens of kilobytes, so a disk that fills up during an hours-long
# build still takes the record of its outcome.
RECORD_RESERVE_BYTES = 1 << 20


@contextlib.contextmanager
def reserved(paths: Sequence[Path]) -> Iterator[None]:
    """Set space aside for each record while the work runs; give back what is left after."""
    try:
        for path in paths:
            try:
                fsutil.reserve_space(path, RECORD_RESERVE_BYTES)
            except OSError as exc:
                raise InputError(
                    f"{path}: cannot set {RECORD_RESERVE_BYTES} bytes aside for the record in "
                    f"{path.parent}: {exc.strerror or exc}"
                ) from None
        yield
    finally:
        for path in paths:
            fsutil.release_space(path)


def new_record(variant: Variant, *, commit: str | None, runner: str) -> ResultRecord:
    return ResultRecord(
        variant=variant.name,
        package=variant.package.name,
        branch=variant.branch.name,
        platform=str(variant.platform),
        commit=commit,
        runner=runner,
    )


def existing_or_new(
    paths: Sequence[Path], variant: Variant, env: Mapping[str, str], cwd: Path
) -> ResultRecord:
    """The record already written for `variant` (test updates what build wrote), else a new one."""
    for path in paths:
        if path.exists():
            record = results.load(path)
            if record.variant != variant.name or record.branch != variant.branch.name:
                raise InputError(
                    f"{path}: holds the record of {record.variant} on branch {record.branch}, "
                    f"not {variant.name} on branch {variant.branch.name}"
                )
            return record
    commit, runner = provenance(env, cwd)
    return new_record(variant, commit=commit, runner=runner)


def save(record: ResultRecord, paths: Sequence[Path]) -> None:
    for path in paths:
        results.save(record, path)
        print(f"wrote {path}", flush=True)
