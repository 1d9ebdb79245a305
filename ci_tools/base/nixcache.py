"""The fleet's Nix binary cache, through `nix` itself (the one adapter for it).

Build legs sign each closure with the fleet's key and copy it to the cache as soon as the
package is built (`nix store sign --key-file`, then `nix copy --to URL`). Test and publish legs
copy it from the cache into their own store (`nix copy --from URL`) trusting only the
cache's public keys (`trusted-public-keys`, `require-sigs`): Nix refuses an unsigned path and
one signed by another key. Nothing here builds: a path the cache lacks is an error, never a
build.

Every `nix` call has a timeout and failures that say "the network" are retried within a
bounded policy, so an unreachable cache ends the step with the reason, never a hang. The
signing key reaches Nix through a pipe (its standard input), never a file or an argument, so
no way the process ends leaves it on disk; it is never printed, and any child output is
redacted of it before anyone sees it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tools.base import proc, redact, retry
from ci_tools.base.errors import InputError, printable
from ci_tools.base.retry import RetryPolicy

NIX = ("nix", "--extra-experimental-features", "nix-command")
COPY_TIMEOUT = 3600.0
SIGN_TIMEOUT = 600.0
# Where `nix store sign` reads the key: the pipe proc.run writes it to (Debian's Nix 2.8 reads
# it there, tests/base/test_nixcache.py signs with it).
KEY_FROM_STDIN = "/dev/stdin"
# A closure of a CUDA build is gigabytes: a few tries, minutes apart, then give up.
POLICY = RetryPolicy(attempts=3, total_seconds=1800.0, initial_seconds=10.0, max_seconds=120.0)
# `nix-store --generate-binary-cache-key` writes NAME:BASE64 of the 64-byte ed25519 key.
_SECRET_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*:[A-Za-z0-9+/]{86}==")
# A store path as Nix makes one (the Nix manual, "Store Path"): the store folder, 32 digits of
# Nix's base32 (no e, o, u, t), a dash, a name of [A-Za-z0-9+-._?=] not starting with a dot.
# Nothing else reaches nix-store: a record's `-v` would be taken as an option, a `..` leaves
# the store.
NIX_STORE = "/nix/store"
_STORE_ENTRY = re.compile(
    r"[0-9abcdfghijklmnpqrsvwxyz]{32}-[A-Za-z0-9+\-_?=][A-Za-z0-9+\-._?=]{0,210}"
)
# What Nix and curl say when the network, not the request, failed.
_TRANSIENT = re.compile(
    r"unable to download|HTTP error (?:5\d\d|429)|Connection refused|Connection reset"
    r"|Could not resolve host|timed out|Couldn't connect|unexpected end-of-file"
    r"|SSL connection|Failed to connect",
    re.IGNORECASE,
)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    ok: bool
    attempts: int
    detail: str  # what Nix said last (redacted), or what was done


class _Failed(Exception):
    def __init__(self, said: str, transient: bool) -> None:
        super().__init__(said)
        self.said = said
        self.transient = transient


def check_secret_key(text: str) -> str | None:
    """Why `text` is not a Nix signing key (without quoting it), or None."""
    if not _SECRET_KEY.fullmatch(text.strip()):
        return (
            "the signing key is not NAME:BASE64 of a 64-byte key "
            "(what `nix-store --generate-binary-cache-key` writes to its secret file)"
        )
    return None


def store_dir(env: Mapping[str, str]) -> str:
    """Nix's store folder: NIX_STORE_DIR where set, else /nix/store."""
    return (env.get("NIX_STORE_DIR") or NIX_STORE).rstrip("/") or "/"


def check_store_path(path: str, env: Mapping[str, str]) -> str | None:
    """Why `path` is not a store path directly under the store folder (without quoting it),
    or None."""
    store = store_dir(env)
    folder, slash, entry = path.rpartition("/")
    if slash and folder == store and _STORE_ENTRY.fullmatch(entry):
        return None
    return (
        f"is not a Nix store path ({store}/<32 base32 characters>-<name>, as `flox build` "
        "links its result)"
    )


def _store_path(path: str, env: Mapping[str, str]) -> str:
    """`path`, checked before nix-store sees it (it would take `-v` for an option)."""
    why = check_store_path(path, env)
    if why is not None:
        raise InputError(f"{printable(path)[:200]!r} {why}")
    return path


def push(
    paths: Sequence[str],
    url: str,
    secret_key: str,
    *,
    env: Mapping[str, str],
    policy: RetryPolicy = POLICY,
    say: Callable[[str], None] = print,
) -> Outcome:
    """Sign the closures of `paths` with `secret_key`, then copy them to the cache `url`."""
    why = check_secret_key(secret_key)
    if why is not None:
        return Outcome(ok=False, attempts=0, detail=why)
    redact = _redactor(secret_key)
    # The key reaches Nix through a pipe, never a file: `--key-file /dev/stdin` (Nix reads the
    # file it is given, and /dev/stdin is the pipe proc.run feeds). A file, however private,
    # outlives a process killed with SIGKILL; a pipe dies with it.
    signed = proc.run(
        [*NIX, "store", "sign", "--key-file", KEY_FROM_STDIN, "--recursive", *paths],
        env=env,
        timeout=SIGN_TIMEOUT,
        stdin=secret_key.strip(),
    )
    if not signed.ok:
        return Outcome(ok=False, attempts=0, detail="nix store sign: " + redact(_last(signed)))
    argv = [*NIX, "copy", "--to", url, *paths]
    return _with_retries(argv, env, policy, say, redact, f"pushed to {url}")


def substitute(
    path: str,
    url: str,
    public_keys: Sequence[str],
    *,
    env: Mapping[str, str],
    policy: RetryPolicy = POLICY,
    say: Callable[[str], None] = print,
) -> Outcome:
    """Copy `path` and its closure from the cache `url` into this machine's store, accepting
    only paths signed by one of `public_keys`."""
    argv = [
        *NIX,
        "copy",
        "--from",
        url,
        "--option",
        "trusted-public-keys",
        " ".join(public_keys),
        "--option",
        "require-sigs",
        "true",
        _store_path(path, env),
    ]
    return _with_retries(argv, env, policy, say, _redactor(""), f"substituted from {url}")


def is_valid(path: str, env: Mapping[str, str]) -> bool:
    """Whether `path` is valid in this machine's store (there, complete, registered)."""
    done = proc.run(["nix-store", "--check-validity", _store_path(path, env)], env=env, timeout=120)
    return done.ok


def add_root(path: str, link: Path, env: Mapping[str, str]) -> bool:
    """Keep `path` from the garbage collector through `link` (a valid path: nothing built)."""
    if link.is_symlink():
        link.unlink()
    done = proc.run(
        ["nix-store", "--realise", _store_path(path, env), "--add-root", str(link), "--indirect"],
        env=env,
        timeout=120,
    )
    return done.ok


def _with_retries(
    argv: list[str],
    env: Mapping[str, str],
    policy: RetryPolicy,
    say: Callable[[str], None],
    redact: Callable[[str], str],
    done: str,
) -> Outcome:
    attempts = 0

    def once() -> None:
        nonlocal attempts
        attempts += 1
        result = proc.run(argv, env=env, timeout=COPY_TIMEOUT)
        if not result.ok:
            said = redact(_last(result))
            raise _Failed(said, result.timed_out or bool(_TRANSIENT.search(said)))

    def announce(number: int, exc: BaseException, delay: float) -> None:
        say(
            f"nix copy failed (attempt {number} of {policy.attempts}): {exc}; retrying in {delay:.0f} s"
        )

    try:
        retry.call(
            policy,
            once,
            transient=lambda exc: isinstance(exc, _Failed) and exc.transient,
            on_retry=announce,
        )
    except _Failed as exc:
        return Outcome(ok=False, attempts=attempts, detail=exc.said)
    return Outcome(ok=True, attempts=attempts, detail=done)


def _last(result: proc.CommandResult) -> str:
    if result.timed_out:
        return f"timed out after {result.seconds:.0f} s"
    lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error")]
    return (errors or lines or [f"exit status {result.returncode}"])[-1].strip()


def _redactor(secret: str) -> Callable[[str], str]:
    """Replace the key (and its secret half alone) wherever a text holds it, in every form
    `redact` knows (percent-encoded, base64, hex, ...)."""
    return redact.of(redact.key_parts(secret.strip()))
