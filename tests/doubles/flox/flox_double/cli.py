"""The commands the double answers: `flox build`, `flox publish`, `flox show`, and the
test-only `flox _double list-packages` (flox has no command that only lists; it computes the
same list internally, build.rs `get_nix_expression_targets`, to check the names it is given)."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from flox_double import faults, git, hub, nef, nixstore, tracing
from flox_double.environment import Environment, open_environment
from flox_double.errors import FloxError

USAGE_ERROR = 2


def main(argv: Sequence[str]) -> int:
    environ = dict(os.environ)
    _log(environ, argv)
    try:
        return _dispatch(list(argv), environ, Path.cwd())
    except FloxError as exc:
        # main.rs:201 message::error: a user message, shown as the log filter allows
        _message(environ, f"❌ ERROR: {exc.message}", sys.stderr)
        return 1
    except faults.FaultConfigError as exc:
        print(f"flox double: {exc}", file=sys.stderr)
        return USAGE_ERROR


def _log(environ: Mapping[str, str], argv: Sequence[str]) -> None:
    log = environ.get("FLOX_DOUBLE_LOG")
    if log:
        with Path(log).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"argv": list(argv), "cwd": str(Path.cwd())}) + "\n")


def _dispatch(argv: list[str], environ: dict[str, str], cwd: Path) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("", [])
    if command == "build":
        return _build(rest, environ, cwd)
    if command == "publish":
        return _publish(rest, environ, cwd)
    if command == "show":
        return _show(rest, environ)
    if command == "_double" and rest[:1] == ["list-packages"]:
        directory, names = _options(rest[1:], cwd, takes={"-d", "--dir"})
        if names:
            return _usage("list-packages takes no package names")
        for target in nef.targets(open_environment(directory["dir"]).pkgs):
            print(target.name)
        return 0
    return _usage(f"`flox {command}` is not modelled by the flox double")


def _usage(message: str) -> int:
    print(f"flox double: {message}", file=sys.stderr)
    return USAGE_ERROR


def _options(
    args: Sequence[str], cwd: Path, *, takes: set[str]
) -> tuple[dict[str, Path | str], list[str]]:
    """`-d/--dir PATH`, `-o/--org NAME`, `--stability S` (accepted, unused) and positionals."""
    values: dict[str, Path | str] = {"dir": cwd}
    positionals: list[str] = []
    items = iter(args)
    for arg in items:
        flag, eq, inline = arg.partition("=")
        if flag in takes or flag in {"--stability"}:
            value = inline if eq else next(items, None)
            if value is None:
                raise FloxError(f"{flag} requires an argument")
            if flag in {"-d", "--dir"}:
                values["dir"] = (cwd / value).resolve()
            elif flag in {"-o", "--org"}:
                values["org"] = value
        elif arg.startswith("-"):
            raise FloxError(f"{arg} is not expected in this context")
        else:
            positionals.append(arg)
    return values, positionals


def _select(env: Environment, names: Sequence[str]) -> list[nef.Target]:
    """commands/build.rs `packages_to_build` and build.rs `PackageTargets::select`."""
    known = nef.targets(env.pkgs)
    if not known:
        raise FloxError(
            "No packages found to build.\n\n"
            "Add a build by modifying the '[build]' section of the manifest with 'flox edit'\n"
            f"or add expression files in '{env.dot_flox}'."
        )
    by_name = {target.name: target for target in known}
    selected: list[nef.Target] = []
    for name in names:
        if name not in by_name:
            raise FloxError(f"Target '{name}' not found.")
        selected.append(by_name[name])
    return selected or known


def _store(environ: Mapping[str, str]) -> Path:
    configured = environ.get("FLOX_DOUBLE_STORE")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"flox-double-store-{os.getuid()}"


def _build_one(
    target: nef.Target,
    *,
    command: str,
    root: Path,
    snapshot: Path,
    link: Path,
    environ: dict[str, str],
    planned: dict[str, faults.Fault],
) -> str:
    """Instantiate and realise one target; returns the derivation. Raises BuildFailed."""
    mode = faults.active(planned.get(target.name), environ, command, target.name)
    if mode == "eval":
        raise nixstore.BuildFailed(faults.eval_error(target.name, target.file))
    if mode == "transient" and command == "build":
        raise nixstore.BuildFailed(faults.download_error())
    env = nixstore.store_env(environ, _store(environ))
    drv = nixstore.instantiate(
        snapshot_root=snapshot,
        recipe=target.file.relative_to(root),
        attr_path=target.name,
        fetch=nixstore.fetch_double(root, environ),
        env=env,
    )
    if mode == "build":
        raise nixstore.BuildFailed(faults.build_error(target.name))
    nixstore.realise(drv, link, env)
    return drv


def _build(args: list[str], environ: dict[str, str], cwd: Path) -> int:
    options, names = _options(args, cwd, takes={"-d", "--dir"})
    env = open_environment(Path(options["dir"]))
    planned = faults.parse(environ)
    selected = _select(env, names)
    root = git.require_tracked(env.parent, [(t.name, t.file) for t in selected])
    with nixstore.temporary_dir() as scratch:
        snapshot = Path(scratch)
        nixstore.snapshot(root, snapshot)
        for target in selected:
            print(f"Building {target.name} in Nix expression mode", flush=True)
            link = env.parent / f"result-{target.name}"
            try:
                _build_one(
                    target,
                    command="build",
                    root=root,
                    snapshot=snapshot,
                    link=link,
                    environ=environ,
                    planned=planned,
                )
            except nixstore.BuildFailed as exc:
                sys.stderr.write(exc.output)
                raise FloxError(f"Build of '{target.name}' failed.") from None
            print(f"Completed build of {target.name} in Nix expression mode", flush=True)
    print(
        "✅ Build completed successfully. Output created: "
        + ", ".join(f"./result-{t.name}" for t in selected)
    )
    return 0


def _logged_in(environ: Mapping[str, str]) -> bool:
    # utils/credential_store/mod.rs: FLOX_FLOXHUB_TOKEN first, then a stored login. The double
    # has no stored login in CI (a runner never ran `flox auth login`); outside CI it assumes
    # the person ran it.
    if environ.get("FLOX_FLOXHUB_TOKEN"):
        return True
    return not environ.get("CI")


def _publish(args: list[str], environ: dict[str, str], cwd: Path) -> int:
    options, names = _options(args, cwd, takes={"-d", "--dir", "-o", "--org"})
    # commands/publish.rs `Publish::publish`, in its order: the environment, authentication,
    # the lock, the target, git tracking, then the repository state.
    env = open_environment(Path(options["dir"]))
    if not _logged_in(environ):
        # commands/mod.rs:1847 `ensure_auth`, AuthFailure::NotLoggedIn (no prompt in CI)
        raise FloxError(
            "You are not logged in to FloxHub.\n\n"
            "To login you can either\n"
            "* login to FloxHub with 'flox auth login',\n"
            "* set the 'floxhub_token' field to '<your token>' in your config\n"
            "* set the '$FLOX_FLOXHUB_TOKEN=<your_token>' environment variable."
        )
    org = str(options.get("org") or environ.get("FLOX_DOUBLE_HANDLE", "floxuser"))
    if not env.lockfile.is_file():
        # commands/publish.rs:207
        raise FloxError(
            "The environment is in an unsupported state for publishing: Environment must be locked."
        )
    if len(names) > 1:
        raise FloxError(f"{names[1]} is not expected in this context")
    selected = _select(env, names)
    if len(selected) != 1:
        raise FloxError("Must specify an artifact to publish")  # publish.rs get_publish_target
    [target] = selected
    root = git.require_tracked(env.parent, [(target.name, target.file)])
    rev = git.publish_metadata(root, env.dot_flox)
    system = environ.get("FLOX_DOUBLE_SYSTEM", "x86_64-linux")
    for earlier in hub.builds(environ, org, target.name):
        if earlier.rev == rev and earlier.system == system:
            # commands/publish.rs:356 the dedup pre-check, before any build
            _message(
                environ,
                "Package already published.\n\n"
                f"Originally published: {earlier.published_at}\n"
                f"Source revision: {earlier.rev}",
            )
            return 0
    planned = faults.parse(environ)
    with nixstore.temporary_dir() as scratch:
        # publish clones the repository and builds there (flox-publish(1), "Publishing
        # process"): the tracked files of the clean checkout, no link in the user's tree.
        snapshot = Path(scratch) / "clone"
        snapshot.mkdir()
        nixstore.snapshot(root, snapshot)
        try:
            drv = _build_one(
                target,
                command="publish",
                root=root,
                snapshot=snapshot,
                link=Path(scratch) / f"result-{target.name}",
                environ=environ,
                planned=planned,
            )
        except nixstore.BuildFailed as exc:
            sys.stderr.write(exc.output)
            raise FloxError(f"build of package(s) failed ({target.name})") from None
        # providers/publish.rs `upload_store_path`: each output is uploaded under the
        # progress span "Uploading '<store path>'", which flox draws only on a terminal
        # (logger.rs filters `progress` fields out of its plain log lines). The path is what
        # this clean clone built. FLOX_DOUBLE_TERMINAL=1 stands for a terminal on stderr.
        uploaded = str((Path(scratch) / f"result-{target.name}").readlink())
        if sys.stderr.isatty() or environ.get("FLOX_DOUBLE_TERMINAL") == "1":
            sys.stderr.write(f"Uploading '{uploaded}'\n")
        _upload_events(environ, uploaded)
        if faults.active(planned.get(target.name), environ, "publish", target.name):
            sys.stderr.write(faults.upload_error(org))
            return 1
    version = _version(drv)
    hub.record(
        environ,
        org,
        target.name,
        hub.Build(
            version=version,
            system=system,
            rev=rev,
            published_at=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        ),
    )
    _message(  # commands/publish.rs:467
        environ,
        f"Package published successfully.\n\nUse 'flox install {org}/{target.name}' to install it.",
    )
    return 0


def _message(environ: Mapping[str, str], text: str, stream: TextIO = sys.stdout) -> None:
    """A user message (flox utils/message.rs: an info event of `flox::utils::message`),
    shown only when the log filter lets that target's info through (logger.rs)."""
    if tracing.enabled(environ, "flox::utils::message", "info"):
        print(text, file=stream)


_PUBLISH_TARGET = "flox_rust_sdk::providers::publish"
_INGRESS = "https://ingress.floxhub.example/cache"


def _upload_events(environ: Mapping[str, str], uploaded: str) -> None:
    """The debug events of providers/publish.rs around one output's upload, logged when the
    filter lets `flox_rust_sdk::providers::publish` debug through: `upload_build_outputs`
    ("Uploading output...", the output as a Debug struct) and `upload_store_path`
    ("Uploading store path to cache" with `store_path=<path>`), on stderr, coloured as
    flox-core's `stderr_supports_color` says."""
    if not tracing.enabled(environ, _PUBLISH_TARGET, "debug"):
        return
    colours = tracing.coloured(environ, sys.stderr.isatty())
    url = f"{_INGRESS}?compression=zstd&write-nar-listing=true"
    events = (
        (
            "publish",
            "Uploading output...",
            {
                "output": f'PackageOutput {{ name: "out", store_path: "{uploaded}" }}',
                "destination_url": _INGRESS,
            },
        ),
        (
            "publish:upload_store_path",
            "Uploading store path to cache",
            {
                "store_path": uploaded,
                "url_with_query": url,
                "cmd": f"nix copy --to {url} {uploaded}",
            },
        ),
    )
    for spans, message, fields in events:
        line = tracing.record(
            level="debug",
            spans=spans,
            target=_PUBLISH_TARGET,
            message=message,
            fields=fields,
            colours=colours,
        )
        sys.stderr.write(line + "\n")


def _version(drv: str) -> str:
    """builtins.parseDrvName: the version starts at the first dash followed by a digit."""
    name = Path(drv).name.split("-", 1)[1].removesuffix(".drv")
    match = re.search(r"-(?=[0-9])", name)
    return name[match.end() :] if match else ""


def _show(args: list[str], environ: dict[str, str]) -> int:
    if len(args) != 1:
        return _usage("flox show takes one <pkg-path>")
    pkg_path = args[0]
    org, slash, name = pkg_path.partition("/")
    found = hub.builds(environ, org, name) if slash else []
    if not found:
        raise FloxError(f"no packages matched this pkg-path: '{pkg_path}'")  # show.rs
    sys.stdout.write(hub.render_show(pkg_path, found))
    return 0
