"""The overlays a catalog names: each is nix/overlays/NAME.nix, and parses.

Every catalog load checks them (`ci-tools matrix` too), so the files are parsed with one
`nix-instantiate --parse` for all of them, and once per process for a set of file versions;
that call starts before the catalog's YAML is read (`prefetch`), and runs while it is.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

from ci_tools.base import nixparse
from ci_tools.catalog import layout
from ci_tools.catalog.model import Catalog
from ci_tools.catalog.yamlsrc import Problems, did_you_mean

OVERLAYS_DIR = layout.OVERLAYS_DIR


def repository_root(folder: Path) -> Path | None:
    """The folder whose nix/overlays/ a catalog's overlay names refer to: the catalog's own,
    or the nearest above it that has one (a test catalog kept under tests/data/). None for a
    catalog outside any build repository (a copy on its own): only the names are checked."""
    for candidate in (folder, *folder.parents):
        if (candidate / OVERLAYS_DIR).is_dir():
            return candidate
    return None


def check_overlays(catalog: Catalog, root: Path, problems: Problems) -> None:
    """Every overlay a branch or toolkit names is nix/overlays/NAME.nix under `root`, and
    parses (`nix-instantiate --parse`, where Nix is installed). Reported at the catalog line."""
    folder = root / OVERLAYS_DIR
    known = {p.stem for p in folder.glob("*.nix")} if folder.is_dir() else set()
    named: list[tuple[str, int]] = []
    for branch in catalog.branches.values():
        named.extend(zip(branch.overlays, branch.overlay_lines, strict=True))
        for toolkit in branch.toolkits:
            named.extend(zip(toolkit.overlays, toolkit.overlay_lines, strict=True))
    used = sorted({name for name, _ in named if name in known})
    errors = parse_errors([folder / f"{name}.nix" for name in used])
    for name, line in named:
        if name not in known:
            problems.add(
                catalog.display_name,
                line,
                f'unknown overlay "{name}": no {OVERLAYS_DIR}/{name}.nix'
                f"{did_you_mean(name, known)}; known: {', '.join(sorted(known)) or 'none'}",
            )
        elif errors.get(name) is not None:
            problems.add(
                catalog.display_name,
                line,
                f"overlay {name} ({OVERLAYS_DIR}/{name}.nix) does not parse: {errors[name]}",
            )


def parse_errors(paths: Sequence[Path]) -> dict[str, str]:
    """nix-instantiate --parse's complaint about each file that does not parse, by file stem;
    empty when all parse or Nix is not installed. One call for all of them: a second, one
    call per file, only when something does not parse (Nix stops at the first error)."""
    if not paths:
        return {}
    versions = _versions(paths)
    for every, started in list(_STARTED.items()):
        started.join()  # a prefetch of every overlay: when all of them parse, so do these
        if set(versions) <= set(every) and _all_parse(every):
            return {}
    import shutil  # here: most loads name no overlay, or find them parsed already

    if shutil.which(nixparse.PARSER) is None:
        return {}  # only their existence is checked
    return dict(_parse_errors_cached(versions))


# Background parses `prefetch` started, by the file versions they parse.
_STARTED: dict[tuple[tuple[str, int, int], ...], threading.Thread] = {}


def prefetch(root: Path | None) -> None:
    """Start parsing every overlay under `root` in the background (its answer is cached):
    the check after the catalog's YAML is read then finds it ready."""
    folder = root / OVERLAYS_DIR if root is not None else None
    paths = sorted(folder.glob("*.nix")) if folder is not None and folder.is_dir() else []
    if not paths:
        return
    versions = _versions(paths)
    if versions not in _STARTED:
        started = threading.Thread(target=_all_parse, args=(versions,), daemon=True)
        started.start()
        _STARTED[versions] = started


def _versions(paths: Sequence[Path]) -> tuple[tuple[str, int, int], ...]:
    return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)


@functools.lru_cache(maxsize=64)
def _all_parse(versions: tuple[tuple[str, int, int], ...]) -> bool:
    """Whether Nix parses every one of these files (one call); False without Nix, or after
    60 s. Only its exit status counts, so it needs none of `proc`'s output handling (nor
    its import, on every start): what Nix says is read when something does not parse."""
    files = [path for path, _, _ in versions]
    try:  # found on PATH as `shutil.which` would (whose import costs every start more)
        pid = _spawn_quietly(nixparse.background_argv(files))
    except OSError:  # not installed (FileNotFoundError); the parse one file at a time says why
        return False
    timer = threading.Timer(60, _kill_if_running, (pid,))
    timer.start()
    try:
        _, status = os.waitpid(pid, 0)  # blocking: no polling, and this is not the main thread
    finally:
        timer.cancel()
    return os.waitstatus_to_exitcode(status) == 0


def _spawn_quietly(argv: list[str]) -> int:
    """Start `argv` (found on PATH) with stdin, stdout and stderr on /dev/null, as
    `subprocess.Popen` would: no other descriptor inherited (`close_fds`), the signals
    Python ignores back at their defaults (`restore_signals`). Through `os.posix_spawnp`,
    since importing `subprocess` (selectors, ...) costs every start about 5 ms, here on the
    critical path of `ci-tools matrix`."""
    devnull = os.open(os.devnull, os.O_RDWR)
    closes: list[tuple[int, ...]] = [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable()]
    try:
        return os.posix_spawnp(
            argv[0],
            argv,
            os.environ,
            file_actions=[*closes, *((os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2))],
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    finally:
        os.close(devnull)


def _inheritable() -> list[int]:
    """This process's descriptors above 2 that a child would inherit (Python opens its own
    close-on-exec; these came from whoever started ci-tools)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            names = [entry.name for entry in Path(folder).iterdir()]
        except OSError:
            continue
        found = []
        for fd in sorted(int(name) for name in names if name.isdigit()):
            try:
                if fd > 2 and os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed already
                continue
        return found
    return []


def _kill_if_running(pid: int) -> None:
    """Kill the child `pid` unless it has exited: asked without reaping it, so the pid is
    still ours; reaped already (ChildProcessError), it is done."""
    try:
        running = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return
    if running:
        os.kill(pid, signal.SIGKILL)


@functools.lru_cache(maxsize=64)
def _parse_errors_cached(versions: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, str], ...]:
    """One parse per set of file versions and process: every catalog load checks them."""
    from ci_tools.base import proc

    if proc.which(nixparse.PARSER) is None:
        return ()
    files = [path for path, _, _ in versions]
    if nixparse.run(files, timeout=60).ok:
        return ()
    out = []
    for path in files:
        result = nixparse.run([path], timeout=60)
        if not result.ok:
            lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
            # "error: syntax error, unexpected ';'" and the "at FILE:LINE:COLUMN:" that follows.
            out.append((Path(path).stem, " ".join(lines[:2]) or f"exit {result.returncode}"))
    return tuple(out)
