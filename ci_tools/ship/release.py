"""The GitHub release of one branch at one commit: tag, outcome table, notes, merged summary.

Pure: records and the catalog in, text and JSON out. `ci_tools.ship.notes` renders the notes;
`ci_tools.base.github_api` does the talking.

Tag scheme: `<branch>-<first 12 hex digits of the commit>`, e.g. `cuda-12_9-1a2b3c4d5e6f`.
Catalog branch names are unique and the commit pins the recipes, so one tag names exactly one
build of one branch; a re-run for the same commit finds and updates the same release. The
versions are in the release name and notes, not the tag, because they follow from the branch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ci_tools.base import markup
from ci_tools.base.errors import InputError
from ci_tools.build import coverage, policy, results
from ci_tools.build.results import SCHEMA, PublishStatus, ResultRecord, Status
from ci_tools.build.smoke.expect import Expectations, expectations_for, of_variants
from ci_tools.catalog.model import Branch
from ci_tools.catalog.variants import Variant
from ci_tools.ship import figures_text

SHORT_SHA = 12

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# What `git check-ref-format` refuses inside one component, and at the ends.
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


def validate_commit(commit: str) -> str:
    commit = commit.strip().lower()
    if not _SHA.fullmatch(commit):
        raise InputError(f'commit "{commit}" is not a full hex commit id (from GITHUB_SHA or git)')
    return commit


def tag_for(branch: str, commit: str) -> str:
    """`<branch>-<sha12>`; raises InputError when that is not a valid git tag name."""
    tag = f"{branch}-{validate_commit(commit)[:SHORT_SHA]}"
    if (
        _BAD_REF.search(tag)
        or tag.startswith(("-", ".", "/"))
        or tag.endswith((".", "/", ".lock"))
        or "/." in tag
        or tag == "@"
    ):
        raise InputError(f'"{tag}" is not a valid git tag name (branch "{branch}")')
    return tag


def release_name(branch: Branch, commit: str) -> str:
    versions = " · ".join(f"{_TITLES.get(p, p)} {v}" for p, v in branch.versions.items())
    return f"{versions} · CUDA {branch.cuda} ({branch.name} @ {commit[:SHORT_SHA]})"


_TITLES = {"pytorch": "PyTorch", "torchvision": "TorchVision", "torchaudio": "TorchAudio"}


class Outcome(StrEnum):
    PUBLISHED = "published"
    BUILD_FAILED = "build failed"
    # A record with no build at all: `test --python` of an interpreter's torch. Nothing
    # was built, so nothing binds bytes to it; it fails like a failed build.
    NOT_BUILT = "not built"
    TEST_FAILED = "test failed"
    NOT_PROVEN = "not proven"
    PUBLISH_FAILED = "publish failed"
    NOT_TESTED = "not tested"
    NOT_PUBLISHED = "proven, not published"
    DRY_RUN = "proven, publish dry run"
    NOT_SELECTED = "not selected"

    @property
    def failed(self) -> bool:
        return self in (
            Outcome.BUILD_FAILED,
            Outcome.NOT_BUILT,
            Outcome.TEST_FAILED,
            Outcome.NOT_PROVEN,
            Outcome.PUBLISH_FAILED,
        )


def outcome_of(
    record: ResultRecord | None, expect: Expectations | None, scope: str = "static"
) -> Outcome:
    """`scope`: what the fleet can do for the variant (its route); the publish policy judges
    the record's proof by it, against the checks the catalog's expectations (`expect`) ask."""
    if record is None:
        return Outcome.NOT_SELECTED
    if record.build is None:
        return Outcome.NOT_BUILT
    if record.build.status is not Status.PASSED:
        return Outcome.BUILD_FAILED
    if record.test is None:
        return Outcome.NOT_TESTED
    verdict = policy.judge(record, scope, expect)
    if verdict.failed or record.test.status is Status.FAILED:
        return Outcome.TEST_FAILED
    if not verdict.allowed:
        return Outcome.NOT_PROVEN
    if record.publish is None:
        return Outcome.NOT_PUBLISHED
    return {
        PublishStatus.PUBLISHED: Outcome.PUBLISHED,
        PublishStatus.FAILED: Outcome.PUBLISH_FAILED,
        PublishStatus.DRY_RUN: Outcome.DRY_RUN,
    }[record.publish.status]


@dataclass(frozen=True, kw_only=True)
class Row:
    """One variant's line in the notes; `libraries` and `detail` quote records, so they hold
    Markdown made with `markup.text`."""

    variant: str
    package: str
    platform: str
    outcome: Outcome
    closure: str  # human size, "" when unknown
    install: str  # `flox install ORG/NAME` for a published variant, else ""
    detail: str
    libraries: str = ""  # libtorch_cpu.so / libtorch_cuda*.so sizes, "" when not measured
    import_time: str = ""  # median wall time of `import torch`, "" when not measured
    proof: str = ""  # how it was proven (policy.describe), "" without a record


@dataclass(frozen=True, kw_only=True)
class Notes:
    """Everything the release notes template shows."""

    tag: str
    name: str
    branch: str
    commit: str
    pytorch: str
    torchvision: str
    cuda: str
    rows: tuple[Row, ...]
    coverage: tuple[str, ...] = ()  # the proof coverage, Markdown lines (the headline)
    drivers: tuple[tuple[str, int | None], ...] = ()  # (CUDA, least driver; None: unknown)
    page_url: str | None = None  # the selector page, where the people who install choose

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.outcome.value] = out.get(row.outcome.value, 0) + 1
        return out

    @property
    def published(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.outcome is Outcome.PUBLISHED)

    @property
    def failed(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.outcome.failed)

    @property
    def publishable(self) -> tuple[Row, ...]:
        """Published, or would be but for a dry run."""
        return tuple(r for r in self.rows if r.outcome in (Outcome.PUBLISHED, Outcome.DRY_RUN))


def of_commit(
    records: Sequence[ResultRecord], commit: str
) -> tuple[list[ResultRecord], list[ResultRecord]]:
    """The records of `commit` (or that name none), and those of another commit: a record
    of another build says nothing about this one, and is never listed as published here."""
    mine = [r for r in records if r.commit is None or r.commit.lower() == commit]
    other = [r for r in records if r.commit is not None and r.commit.lower() != commit]
    return mine, other


def check_records(records: Sequence[ResultRecord], branch: str, known: Iterable[str]) -> None:
    """Every record must belong to this branch and name a variant of it (exit 2 otherwise)."""
    names = set(known)
    seen: set[str] = set()
    for record in records:
        if record.branch != branch:
            raise InputError(
                f"result record of {record.variant} is for branch {record.branch}, not {branch}"
            )
        if record.variant not in names:
            raise InputError(f"result record names {record.variant}, not a variant of {branch}")
        if record.variant in seen:
            raise InputError(f"two result records for {record.variant}")
        seen.add(record.variant)


def build_notes(
    *,
    branch: Branch,
    variants: Sequence[Variant],
    records: Sequence[ResultRecord],
    commit: str,
    org: str | None,
    planned: Iterable[str] = (),
    scopes: Mapping[str, str] | None = None,
    page_url: str | None = None,
) -> Notes:
    """`planned`: the variants this run planned; one with no record failed (its job was
    cancelled or timed out before writing anything), it was not "not selected". `scopes`:
    each variant's route, what the fleet can do for it (default: static proofs at least)."""
    by_name = {r.variant: r for r in records}
    expected = set(planned)
    routes = scopes or {}
    rows = tuple(
        _row(
            variant,
            by_name.get(variant.name),
            routes.get(variant.name, "static"),
            org,
            planned=variant.name in expected,
        )
        for variant in variants
    )
    absent = [v.name for v in variants if v.name in expected and v.name not in by_name]
    chosen = [by_name[v.name] for v in variants if v.name in by_name]
    return Notes(
        tag=tag_for(branch.name, commit),
        name=release_name(branch, commit),
        branch=branch.name,
        commit=commit,
        pytorch=branch.versions.get("pytorch", "-"),
        torchvision=branch.versions.get("torchvision", "-"),
        cuda=branch.cuda,
        rows=rows,
        coverage=tuple(coverage.markdown(coverage.coverage(chosen, of_variants(variants), absent))),
        drivers=tuple((t.cuda_short, t.min_driver) for t in branch.toolkits),
        page_url=page_url,
    )


def _row(
    variant: Variant, record: ResultRecord | None, scope: str, org: str | None, *, planned: bool
) -> Row:
    expected = expectations_for(variant)
    outcome = outcome_of(record, expected, scope)
    missing = record is None and planned
    if missing:
        outcome = Outcome.BUILD_FAILED
    publish_org = _install_org(record, org)
    return Row(
        variant=variant.name,
        package=variant.package.name,
        platform=variant.platform.value,
        outcome=outcome,
        closure=figures_text.size(record.build.closure_bytes if record and record.build else None),
        install=(
            f"flox install {publish_org}/{variant.name}"
            if outcome is Outcome.PUBLISHED and publish_org
            else ""
        ),
        detail=(
            "planned, but no record: its job was cancelled or timed out"
            if missing
            else _detail(record, outcome, scope, expected)
        ),
        libraries=figures_text.libraries(record),
        import_time=figures_text.import_time(record),
        proof=markup.text(policy.describe(record, expected)) if record is not None else "",
    )


def _install_org(record: ResultRecord | None, org: str | None) -> str | None:
    """The org of the install line: the one the record says the variant went to. `--org`
    names where this run published, and a variant published elsewhere (or nowhere) gets no
    install line; without `--org`, the record's org only where it is an organisation name
    (`publish.validate_org`'s grammar): a record is no place to take a shell line from."""
    from ci_tools.ship import publish

    publish_org = record.publish.org if record and record.publish else None
    if publish_org is None or (org is not None and publish_org != org):
        return None
    return publish_org if publish.is_org(publish_org) else None


def _detail(record: ResultRecord | None, outcome: Outcome, scope: str, want: Expectations) -> str:
    if record is None:
        return ""
    if outcome is Outcome.NOT_PROVEN:
        return markup.text(policy.judge(record, scope, want).why)
    if outcome is Outcome.TEST_FAILED and record.test is not None:
        failed = [markup.text(c.name) for c in record.test.checks if c.status is Status.FAILED]
        return "failed checks: " + ", ".join(failed) if failed else ""
    if outcome is Outcome.PUBLISH_FAILED and record.publish is not None:
        lines = record.publish.detail.splitlines()
        return markup.text(lines[0]) if lines else ""
    return ""


# A results asset holds a record per variant (a few KiB each); a larger one is not read.
MAX_ASSET_BYTES = 32 * 1024 * 1024


def asset_name(tag: str) -> str:
    return f"results-{tag}.json"


def _asset_entries(previous: Any, *, commit: str, source: str) -> list[tuple[str, dict[str, Any]]]:
    """The variant entries of a release's results asset from an earlier run, each with where
    it sits for messages; the asset must be of `commit`. None (no asset) has none."""
    if previous is None:
        return []
    if not isinstance(previous, dict) or not isinstance(previous.get("variants"), list):
        raise InputError(f"{source}: not a release results asset (no variants list)")
    if previous.get("commit") != commit:
        raise InputError(
            f"{source}: the asset is of commit {previous.get('commit')}, the release of {commit}"
        )
    entries = []
    for index, entry in enumerate(previous["variants"]):
        if not isinstance(entry, dict):
            raise InputError(f"{source}: variants[{index}] is not an object")
        entries.append((f"{source}: variants[{index}].record", entry))
    return entries


def merge_previous(
    previous: Any, records: Sequence[ResultRecord], *, commit: str, source: str
) -> list[ResultRecord]:
    """This run's records plus, for every variant this run has no record of, the record the
    release's previous asset (`summary` of an earlier run at the same commit) holds: a
    narrower selection keeps the variants an earlier run built and published. A record of
    this run wins. Bad asset content is an InputError naming SOURCE and the field."""
    have = {r.variant for r in records}
    merged = list(records)
    for where, entry in _asset_entries(previous, commit=commit, source=source):
        data = entry.get("record")
        if data is None or entry.get("variant") in have:
            continue
        record = results.from_json(data, where)
        if record.variant not in have:
            merged.append(record)
            have.add(record.variant)
    return merged


def published_in(
    previous: Any, *, commit: str, org: str, source: str, names: Iterable[str]
) -> list[str]:
    """The variants among NAMES that the release's asset (of an earlier run at the same
    commit) records as published to ORG: FloxHub has their build of this commit, so a
    re-dispatch need not build them again. Bad asset content is an InputError naming SOURCE."""
    wanted = set(names)
    found = set()
    for where, entry in _asset_entries(previous, commit=commit, source=source):
        if entry.get("variant") not in wanted or entry.get("record") is None:
            continue
        done = results.from_json(entry["record"], where).publish
        if done is not None and done.status is PublishStatus.PUBLISHED and done.org == org:
            found.add(entry["variant"])
    return sorted(found)


def summary(notes: Notes, records: Sequence[ResultRecord]) -> dict[str, Any]:
    """The merged results attached to the release: the outcome of every variant, plus the
    full record of each one that ran."""
    by_name = {r.variant: r for r in records}
    return {
        "schema": SCHEMA,
        "tag": notes.tag,
        "branch": notes.branch,
        "commit": notes.commit,
        "versions": {"pytorch": notes.pytorch, "torchvision": notes.torchvision},
        "cuda": notes.cuda,
        "counts": notes.counts,
        "variants": [
            {
                "variant": row.variant,
                "outcome": row.outcome.value,
                "record": by_name[row.variant].to_json() if row.variant in by_name else None,
            }
            for row in notes.rows
        ],
    }
