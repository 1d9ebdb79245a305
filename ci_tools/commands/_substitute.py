"""A test leg's build: the store path its build record names, copied from the fleet's
binary cache into this runner's store, never built here (`ci-tools test --substitute`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import narinfo, nixcache
from ci_tools.base.errors import InputError, printable
from ci_tools.build import results
from ci_tools.build.results import BuildOutcome, CacheStatus, Check, Status
from ci_tools.plan.binarycache import BinaryCache

CHECK = "substitute"


@dataclass(frozen=True, kw_only=True)
class Got:
    skip: bool = False  # not built: nothing to test, nothing to record
    reason: str = ""
    failure: Check | None = None  # why the build is not here (a failed check)


def _failed(detail: str) -> Got:
    return Got(failure=Check(name=CHECK, status=Status.FAILED, detail=detail))


def build_of(
    paths: Sequence[Path],
    variant: str,
    cache: BinaryCache | None,
    link: Path,
    env: Mapping[str, str],
) -> Got:
    """Bring the build its record names into this runner's store and link it at `link`."""
    if not paths:
        raise InputError("--substitute reads the build's record: pass --results DIR")
    record = results.load(paths[0]) if paths[0].exists() else None
    build = record.build if record is not None else None
    if build is None or build.status is not Status.PASSED:
        said = "no build record" if build is None else f"its build {build.status}"
        return Got(skip=True, reason=f"{variant}: {said}; nothing to test")
    path = build.store_path
    if path is None:
        return _failed("the build record names no store path to take from the cache")
    why = nixcache.check_store_path(path, env)
    if why is not None:
        shown = printable(path)[:200].replace("\n", "\\n")
        raise InputError(
            f"{paths[0]}: build.store_path {shown!r} {why}: only the record `ci-tools build` "
            "wrote names the build to test; build it again"
        )
    if nixcache.is_valid(path, env):
        return _bound(build, path, env) or _linked(
            path, link, env, "already in this runner's store"
        )
    if cache is None:
        # The matrix routes no test leg away from its build without a cache: the build leg
        # ran on another host that has the same labels (a pool of several hosts).
        return _failed(
            f"{path} is not in this runner's store and runners.yaml names no cache to take "
            "it from: its build leg ran on another host with the same labels. Add `cache:`, "
            "or give the pool one host"
        )
    pushed = build.cache
    if pushed is None or pushed.status is not CacheStatus.PUSHED:
        why = pushed.detail if pushed is not None else "the build leg pushed nothing"
        return _failed(
            f"built on {record.runner if record else 'its builder'}, not pushed to "
            f"{cache.url} ({why}): nothing to test here; re-run the build leg"
        )
    got = nixcache.substitute(path, cache.url, cache.public_keys, env=env)
    if not got.ok:
        return _failed(f"{path} could not be substituted from {cache.url}: {got.detail}")
    return _bound(build, path, env) or _linked(path, link, env, got.detail)


def _bound(build: BuildOutcome, path: str, env: Mapping[str, str]) -> Got | None:
    """A failure when the path here is not the bytes the build recorded (another build of
    the same derivation, pushed over it, or changed on a runner): its NAR hash differs."""
    recorded = build.output(path)
    if recorded is None:
        return None  # a record from before NAR hashes were recorded: nothing to compare
    try:
        here = narinfo.one(path, env)
    except narinfo.NarInfoError as exc:
        return _failed(f"{path}: cannot read its NAR hash here ({exc}); not tested")
    if here.nar_hash != recorded.nar_hash:
        return _failed(
            f"{path} here has NAR hash {here.nar_hash}, its build recorded "
            f"{recorded.nar_hash}: not the bytes that were built; not tested. Re-run the "
            "build leg, then this one"
        )
    return None


def _linked(path: str, link: Path, env: Mapping[str, str], how: str) -> Got:
    if not nixcache.add_root(path, link, env):
        return _failed(f"{path}: nix-store could not register {link} as its garbage-collector root")
    print(f"{path}: {how}")
    return Got()
