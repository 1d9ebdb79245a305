"""`ci-tools verify VARIANT|STORE_PATH (--manifest FILE | --release TAG)`: is what is installed
here the bytes a release published?

The NAR hash is recomputed from the path's files (`nix-hash`, the sha256 of what
`nix-store --dump` writes), not read from the store's database, so a path changed on disk is
caught; it is compared with the release's manifest (`manifest-<tag>.json`, a release asset,
or a copy given with --manifest). Exit 0 when it matches, 1 when not (or the path is not
here), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

from ci_tools.base import bounded, narinfo, nixcache
from ci_tools.base.errors import EXIT_FAILED, EXIT_OK, InputError, printable
from ci_tools.ship import manifest
from ci_tools.ship import verify as judgement

_VARIANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="VARIANT|STORE_PATH", help="a variant's name, or the store path installed"
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--manifest", type=Path, metavar="FILE", help="the release's manifest")
    where.add_argument(
        "--release",
        metavar="TAG",
        help="read manifest-TAG.json from the release TAG of $GITHUB_REPOSITORY (needs "
        "GITHUB_TOKEN or GH_TOKEN)",
    )


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    data, source = _manifest_data(args)
    entries = manifest.entries(data, source)
    tag = str(data.get("tag") or args.release or "")
    repository = str(data.get("repository") or "")
    entry = _entry_for(args.target, entries, env, source)
    if not nixcache.is_valid(entry.store_path, env):
        print(
            f"NOT HERE: {entry.store_path} ({entry.variant}, as release {tag} published it) is "
            "not in this machine's Nix store: what is installed is another build, or nothing"
        )
        return EXIT_FAILED
    try:
        on_disk = narinfo.nar_hash_on_disk(entry.store_path, env)
    except narinfo.NarInfoError as exc:
        raise InputError(str(exc)) from None
    verdict = judgement.judge(entry, on_disk, tag=tag, repository=repository)
    for line in verdict.lines:
        print(line)
    return EXIT_OK if verdict.matches else EXIT_FAILED


def _entry_for(
    target: str, entries: list[manifest.Entry], env: dict[str, str], source: str
) -> manifest.Entry:
    if target.startswith("/"):
        why = nixcache.check_store_path(target, env)
        if why is not None:
            raise InputError(f"{printable(target)[:200]!r} {why}")
        found = manifest.find(entries, variant=None, store_path=target)
        if found is None:
            raise InputError(
                f"{target} is not a path {source} lists as published: give the variant's name "
                "to check the path the release published"
            )
        return found
    if not _VARIANT.fullmatch(target):
        raise InputError(f"{printable(target)[:200]!r} is neither a variant name nor a store path")
    found = manifest.find(entries, variant=target, store_path=None)
    if found is None:
        listed = ", ".join(e.variant for e in entries[:10]) or "none"
        raise InputError(f"{source} lists no published {target} (it lists: {listed})")
    return found


def _manifest_data(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    if args.manifest is not None:
        source = str(args.manifest)
        try:
            text = bounded.read_text(args.manifest, manifest.MAX_BYTES)
        except (OSError, ValueError) as exc:
            raise InputError(f"{source}: cannot read the manifest: {exc}") from None
    else:
        if not _TAG.fullmatch(args.release):
            raise InputError(f"--release {printable(args.release)[:100]!r} is not a tag name")
        source = f"release {args.release} asset {manifest.manifest_name(args.release)}"
        text = _download(args.release)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise InputError(f"{source}: not a ci-tools release manifest")
    return data, source


def _download(tag: str) -> str:
    from ci_tools.base import github_api
    from ci_tools.base.retry import RetryPolicy

    settings = github_api.settings_from_env(os.environ)
    policy = RetryPolicy(attempts=4, total_seconds=120, initial_seconds=2, max_seconds=30)
    api = github_api.connect(settings, policy, print)
    release = api.find_release(tag)
    if release is None:
        raise InputError(f"{settings.repository} has no release {tag}")
    name = manifest.manifest_name(tag)
    raw = api.asset_bytes(release, name, manifest.MAX_BYTES)
    if raw is None:
        raise InputError(f"release {tag} has no asset {name}: it was released before manifests")
    return raw.decode("utf-8", "replace")
