"""`ci-tools mark-green --publish DIR --planned FILE ...`: publish a run's greens in aggregate.

Each stack's mark-green job (after its own test leg) judges the stack as `--shard` does and,
with `--record DIR`, writes its verdict to `DIR/<stack>.green` ("<stack> <fingerprint>"),
which the workflow uploads as the artifact `green-<stack>`: no REST request. One job at the
end of the run (also of a cancelled one) downloads every `green-*` into DIR and runs this: one
check run per 1,985 greens (`plan.greens_aggregate`), so a push of 1,100 stacks costs one
write, within GitHub's limits at any size.

The self-hosted legs of the same run could upload an artifact of that name too: a green
counts only when the plan planned that stack with that very fingerprint (FILE: the plan's
matrices, `{"include": [...]}` as `ci-tools matrix` writes them, which the plan job's outputs
carry and no other job can change). Every other file gets a notice. What GitHub refuses is a
notice too (the stacks are built again by the next run), never a failure: exit 0, or 2 for
bad input (DIR missing, a FILE unreadable, no token).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from ci_tools.base import bounded, ghevent, ghoutput, matrix_file
from ci_tools.base.errors import InputError
from ci_tools.base.retry import RetryPolicy
from ci_tools.commands import _green
from ci_tools.plan import statuses

POLICY = RetryPolicy(attempts=4, total_seconds=600.0, initial_seconds=5.0, max_seconds=120.0)
SUFFIX = ".green"
UNPROVABLE_SUFFIX = ".unprovable"
UNPROVEN = "not proven: "  # how `_green_shard` says a stack's records proved nothing
# A run plans at most 64 shards of 256 stacks (`ci-tools matrix --max-shards`).
MAX_FILES = 64 * 256
MAX_FILE_BYTES = 1024


def record(folder: Path, stack: str, fingerprint: str, *, unprovable: bool = False) -> Path:
    """Write one stack's green (or, `unprovable`, that its passed legs proved nothing this
    fleet checks) for the publishing job; the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stack}{UNPROVABLE_SUFFIX if unprovable else SUFFIX}"
    path.write_text(f"{stack} {fingerprint}\n", encoding="utf-8")
    return path


def planned(files: list[Path]) -> dict[str, str]:
    """stack -> fingerprint of every entry the plan's matrices hold with one."""
    wanted: dict[str, str] = {}
    for path in files:
        source = f"--planned {path}"
        for entry in matrix_file.parse(matrix_file.read_text(path, "--planned"), source):
            if isinstance(entry.name, str) and isinstance(entry.fingerprint, str):
                wanted[entry.name] = entry.fingerprint
    return wanted


def claimed(folder: Path, env: Mapping[str, str], suffix: str = SUFFIX) -> dict[str, str]:
    """stack -> fingerprint of each `*.green` file under `folder`. A file that is not one
    (which only a leg of this run could have uploaded) gets a notice: it must not cost the
    run's other greens."""
    if not folder.is_dir():
        raise InputError(f"--publish {folder}: no such folder (create it, even empty)")
    paths = sorted(folder.rglob(f"*{suffix}"))
    if len(paths) > MAX_FILES:
        raise InputError(f"--publish {folder}: {len(paths)} green files, more than {MAX_FILES}")
    found: dict[str, str] = {}
    for path in paths:
        try:
            parts = bounded.read_text(path, MAX_FILE_BYTES).split()
        except (OSError, UnicodeDecodeError) as exc:
            ghoutput.notice(f"mark-green: {path}: cannot read it ({exc}): not recorded", env)
            continue
        problem = 'not "<stack> <fingerprint>"' if len(parts) != 2 else None
        if problem is None:
            problem = statuses.check_stack(parts[0]) or statuses.check_fingerprint(parts[1])
        if problem is not None:
            ghoutput.notice(f"mark-green: {path}:1: {problem}: not recorded", env)
            continue
        found[parts[0]] = parts[1]
    return found


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    if not args.planned:
        raise InputError("--publish needs --planned FILE (the plan's matrices), at least one")
    wanted = planned(args.planned)
    kept = _kept(claimed(args.publish, env), wanted, env)
    unprovable = _kept(claimed(args.publish, env, UNPROVABLE_SUFFIX), wanted, env)
    commit = _green.commit(args.commit, env)
    _summarise(unprovable, env)
    read_only = ghevent.read_only_reason(env)
    if read_only is not None or not (kept or unprovable):
        why = read_only or "no stack of this run was proven"
        ghoutput.notice(f"mark-green: {len(kept)} greens not published: {why}", env)
        return 0
    from ci_tools.base import github_api
    from ci_tools.catalog import layout
    from ci_tools.plan import greens_aggregate

    inventory = greens_aggregate.inventory_digest(args.runners or Path.cwd() / layout.RUNNERS)
    lines = [greens_aggregate.unprovable_digest(s, fp, inventory) for s, fp in unprovable.items()]
    settings = github_api.settings_from_env(env)
    api = github_api.connect_lazy(settings, POLICY, lambda line: ghoutput.notice(line, env))
    refused = greens_aggregate.publish(
        api, commit=commit, greens=kept, target_url=_green.run_url(env), unprovable=lines
    )
    for why in refused:
        ghoutput.notice(f"mark-green: {settings.redact(why)}", env)
    print(
        f"ci-tools: mark-green: {len(kept)} stacks of {len(wanted)} planned published green"
        f" ({len(unprovable)} not provable on this fleet) at {commit[:12]} in "
        f"{len(greens_aggregate.texts(kept, lines))} check run(s)"
        + (f", {len(refused)} refused" if refused else "")
    )
    return 0


def _kept(
    claims: Mapping[str, str], wanted: Mapping[str, str], env: Mapping[str, str]
) -> dict[str, str]:
    """The claims the plan planned with that very fingerprint; a notice for each other."""
    kept: dict[str, str] = {}
    for stack, fingerprint in claims.items():
        if wanted.get(stack) != fingerprint:
            why = "not planned with that fingerprint in this run: not recorded"
            ghoutput.notice(f"mark-green: {statuses.context(stack)} {why}", env)
            continue
        kept[stack] = fingerprint
    return kept


def _summarise(unprovable: Mapping[str, str], env: Mapping[str, str]) -> None:
    """Name the stacks this fleet could not prove in the run's summary (issue 28 item 6)."""
    if not unprovable:
        return
    lines = [
        "### Built, not provable on this fleet",
        "",
        "Their legs passed, but no runner could run their checks; they are not built again "
        "until their inputs or runners.yaml change.",
        "",
        *(f"- `{stack}`" for stack in sorted(unprovable)),
    ]
    text = "\n".join(lines) + "\n"
    target = env.get("GITHUB_STEP_SUMMARY", "").strip()
    if not target:
        print(text, end="")
        return
    with Path(target).open("a", encoding="utf-8") as handle:
        handle.write(text)
