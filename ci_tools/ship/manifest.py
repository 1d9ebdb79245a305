"""The release's manifest: per published variant, the bytes that were published (store path,
NAR hash, NAR size), how they were proven and on which runner; and the `subject-checksums`
files `actions/attest` signs (pure: records in, JSON and text out).

The manifest is a release asset (`manifest-<tag>.json`); `ci-tools verify` reads it back.
A variant published from a record that carries no NAR hash (built by an older ci-tools) is
listed under `unbound`: nothing binds its bytes, and nothing is attested for it. (`publish`
refuses such a record now; one published by an earlier ci-tools can still be in a release.)

`subject-checksums` is a file of `<sha256 hex>  <name>` lines, the format `shasum -a 256`
writes (actions/attest README, "subject-checksums"); one attestation takes at most 1,024
subjects (actions/attest README: "a maximum of 1024 subjects"), so more are split.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ci_tools.base.errors import InputError
from ci_tools.base.narinfo import sri_to_hex
from ci_tools.build import policy
from ci_tools.build.results import ResultRecord
from ci_tools.build.smoke.expect import Expectations, ExpectOf

KIND = "ci-tools release manifest"
SCHEMA = 1
MAX_SUBJECTS = 1024
MAX_BYTES = 64 << 20  # what a reader takes of a manifest: a few hundred bytes a variant
_NAR_HASH = re.compile(r"sha256-[A-Za-z0-9+/]{43}=")
_VARIANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")


@dataclass(frozen=True, kw_only=True)
class Entry:
    variant: str
    store_path: str
    nar_hash: str  # SRI
    nar_size: int
    sha256: str  # the NAR hash as hex: the attestation's subject digest
    proof: str  # how it was proven (the publish policy's words)
    proven_on: str  # the runner the checks ran on; "" when the record does not say
    route: str  # what the fleet could do for it: gpu, cpu, static, none
    org: str  # the Flox organisation it was published to


def manifest_name(tag: str) -> str:
    return f"manifest-{tag}.json"


def entry_of(record: ResultRecord, expect: Expectations | None) -> Entry | None:
    """The record's entry; None when its build carries no NAR hash. `expect`: the catalog's
    expectations of its variant, which the policy's words on its proof judge it by."""
    build, test = record.build, record.test
    if build is None or not build.outputs:
        return None
    output = build.output(build.store_path or "") or build.outputs[0]
    return Entry(
        variant=record.variant,
        store_path=output.store_path,
        nar_hash=output.nar_hash,
        nar_size=output.nar_size,
        sha256=sri_to_hex(output.nar_hash),
        proof=policy.describe(record, expect),
        proven_on=(test.runner or "") if test is not None else "",
        route=test.route.scope if test is not None and test.route is not None else "",
        org=record.publish.org if record.publish is not None else "",
    )


def build(
    *,
    tag: str,
    commit: str,
    branch: str,
    repository: str,
    records: Iterable[ResultRecord],
    published: Iterable[str],
    expect_of: ExpectOf,
) -> dict[str, Any]:
    chosen = set(published)
    entries, unbound = [], []
    for record in sorted(records, key=lambda r: r.variant):
        if record.variant not in chosen:
            continue
        entry = entry_of(record, expect_of(record))
        if entry is None:
            unbound.append(record.variant)
        else:
            entries.append(asdict(entry))
    return {
        "kind": KIND,
        "schema": SCHEMA,
        "tag": tag,
        "commit": commit,
        "branch": branch,
        "repository": repository,  # OWNER/NAME: where the attestation is (gh --repo)
        "variants": entries,
        "unbound": unbound,
    }


def entries(data: object, source: str) -> list[Entry]:
    """A manifest's entries, checked; InputError naming SOURCE and the field."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise InputError(f"{source}: not a ci-tools release manifest (kind {KIND!r})")
    if data.get("schema") != SCHEMA:
        raise InputError(f"{source}: manifest schema {data.get('schema')!r}; this reads {SCHEMA}")
    found = data.get("variants")
    if not isinstance(found, list):
        raise InputError(f"{source}: variants must be a list")
    return [_entry(item, f"{source}: variants[{i}]") for i, item in enumerate(found)]


def _entry(item: object, where: str) -> Entry:
    fields = Entry.__dataclass_fields__
    if not isinstance(item, dict) or set(item) != set(fields):
        raise InputError(f"{where}: must be an object with exactly {', '.join(fields)}")
    texts = {k: v for k, v in item.items() if k != "nar_size"}
    if not all(isinstance(v, str) for v in texts.values()):
        raise InputError(f"{where}: every field but nar_size is a string")
    size = item["nar_size"]
    if type(size) is not int or size < 0:
        raise InputError(f"{where}.nar_size: must be a whole number")
    if not _VARIANT.fullmatch(item["variant"]) or not _NAR_HASH.fullmatch(item["nar_hash"]):
        raise InputError(f"{where}: variant or nar_hash (sha256-<base64>) malformed")
    if sri_to_hex(item["nar_hash"]) != item["sha256"]:
        raise InputError(f"{where}: sha256 is not the hex of nar_hash")
    return Entry(**item)


def subject_files(manifest: Mapping[str, Any]) -> list[str]:
    """The `subject-checksums` files: `<hex>  <variant>` lines, at most MAX_SUBJECTS a file."""
    lines = [f"{e['sha256']}  {e['variant']}\n" for e in manifest["variants"]]
    return ["".join(lines[i : i + MAX_SUBJECTS]) for i in range(0, len(lines), MAX_SUBJECTS)]


def find(found: Sequence[Entry], *, variant: str | None, store_path: str | None) -> Entry | None:
    for entry in found:
        if variant is not None and entry.variant == variant:
            return entry
        if store_path is not None and entry.store_path == store_path:
            return entry
    return None
