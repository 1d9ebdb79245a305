"""The binary cache adapter against real Nix (Debian's nix-bin): a private builder store, a
`file://` binary cache, a real key pair, and separate stores that substitute from it."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_tools.base import nixcache
from ci_tools.base.retry import RetryPolicy

pytestmark = pytest.mark.skipif(
    shutil.which("nix") is None or shutil.which("nix-store") is None,
    reason="needs Nix (Debian's nix-bin)",
)

FAST = RetryPolicy(attempts=3, total_seconds=60, initial_seconds=0.01, max_seconds=0.01)

CLOSURE = """
let
  dep = derivation { name = "dep"; system = builtins.currentSystem; builder = "/bin/sh";
                     args = [ "-c" "echo dependency > $out" ]; };
in derivation { name = "top"; system = builtins.currentSystem; builder = "/bin/sh";
                args = [ "-c" "echo ${dep} > $out" ]; }
"""


@dataclass(frozen=True)
class Fleet:
    tmp: Path
    builder: dict[str, str]  # the builder's store
    top: str  # a built path with one dependency
    secret: str
    public: str

    def store(self, name: str) -> dict[str, str]:
        """Another machine's store: the same store directory, its own files and database."""
        root = self.tmp / name
        return {
            **self.builder,
            "NIX_REMOTE": f"local?real={root}/store&state={root}/var&log={root}/log",
        }

    def cache(self, name: str = "cache") -> str:
        return f"file://{self.tmp / name}"


def _run(argv: list[str], env: Mapping[str, str]) -> str:
    done = subprocess.run(argv, env=dict(env), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def keypair(tmp: Path, name: str) -> tuple[str, str]:
    secret, public = tmp / f"{name}.sec", tmp / f"{name}.pub"
    subprocess.run(
        ["nix-store", "--generate-binary-cache-key", name, str(secret), str(public)], check=True
    )
    return secret.read_text().strip(), public.read_text().strip()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    tmp = tmp_path_factory.mktemp("fleet")
    etc = tmp / "etc"
    etc.mkdir()
    (etc / "nix.conf").write_text("sandbox = false\nsubstituters =\nbuild-users-group =\n")
    builder = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp),
        "NIX_STORE_DIR": str(tmp / "nix" / "store"),
        "NIX_STATE_DIR": str(tmp / "builder" / "var"),
        "NIX_LOG_DIR": str(tmp / "builder" / "log"),
        "NIX_CONF_DIR": str(etc),
        "NIX_REMOTE": "",
    }
    recipe = tmp / "closure.nix"
    recipe.write_text(CLOSURE)
    drv = _run(["nix-instantiate", str(recipe)], builder)
    top = _run(["nix-store", "--realise", drv], builder)
    secret, public = keypair(tmp, "fleet-cache-1")
    return Fleet(tmp=tmp, builder=builder, top=top, secret=secret, public=public)


def test_a_separate_store_gets_the_closure_from_the_cache_without_building(fleet: Fleet) -> None:
    said: list[str] = []
    pushed = nixcache.push(
        [fleet.top], fleet.cache(), fleet.secret, env=fleet.builder, say=said.append
    )
    assert pushed.ok, pushed.detail
    tester = fleet.store("tester")
    assert not nixcache.is_valid(fleet.top, tester)
    got = nixcache.substitute(fleet.top, fleet.cache(), [fleet.public], env=tester, policy=FAST)
    assert got.ok and got.attempts == 1, got.detail
    assert nixcache.is_valid(fleet.top, tester)
    closure = _run(["nix-store", "--query", "--requisites", fleet.top], tester).split()
    assert len(closure) == 2
    # The files are in the tester's own store, and its database never saw a derivation.
    for path in closure:
        assert (fleet.tmp / "tester" / "store" / Path(path).name).is_file()
    assert not list((fleet.tmp / "tester" / "store").glob("*.drv"))
    assert nixcache.add_root(fleet.top, fleet.tmp / "result-top", tester)
    assert (fleet.tmp / "result-top").resolve() == Path(fleet.top)


def test_a_path_the_cache_lacks_is_an_error_not_a_build(fleet: Fleet) -> None:
    empty = fleet.tmp / "empty-cache"
    _run(
        [
            "nix",
            "--extra-experimental-features",
            "nix-command",
            "store",
            "ping",
            "--store",
            f"file://{empty}",
        ],
        fleet.builder,
    )
    got = nixcache.substitute(
        fleet.top, f"file://{empty}", [fleet.public], env=fleet.store("t2"), policy=FAST
    )
    assert not got.ok and got.attempts == 1
    assert not nixcache.is_valid(fleet.top, fleet.store("t2"))


def fresh_closure(fleet: Fleet, name: str) -> str:
    """Another closure built on the builder, never signed by anyone."""
    recipe = fleet.tmp / f"{name}.nix"
    recipe.write_text(CLOSURE.replace("dependency", name))
    drv = _run(["nix-instantiate", str(recipe)], fleet.builder)
    return _run(["nix-store", "--realise", drv], fleet.builder)


def test_an_unsigned_path_is_refused(fleet: Fleet) -> None:
    unsigned = fleet.tmp / "unsigned-cache"
    top = fresh_closure(fleet, "unsigned")
    _run(
        [
            "nix",
            "--extra-experimental-features",
            "nix-command",
            "copy",
            "--to",
            f"file://{unsigned}",
            top,
        ],
        fleet.builder,
    )
    tester = fleet.store("t3")
    got = nixcache.substitute(top, f"file://{unsigned}", [fleet.public], env=tester, policy=FAST)
    assert not got.ok
    assert got.attempts == 1  # a refusal is not retried
    assert "lacks a valid signature" in got.detail
    assert not nixcache.is_valid(top, tester)


def test_a_path_signed_with_an_untrusted_key_is_refused(fleet: Fleet) -> None:
    other_secret, other_public = keypair(fleet.tmp, "someone-else-1")
    top = fresh_closure(fleet, "foreign")
    assert nixcache.push([top], fleet.cache("other"), other_secret, env=fleet.builder).ok
    tester = fleet.store("t4")
    got = nixcache.substitute(top, fleet.cache("other"), [fleet.public], env=tester, policy=FAST)
    assert not got.ok and "lacks a valid signature" in got.detail
    assert not nixcache.is_valid(top, tester)
    # The same cache, trusting its real signer, is accepted.
    assert nixcache.substitute(
        top, fleet.cache("other"), [other_public], env=tester, policy=FAST
    ).ok


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_cache_is_retried_a_bounded_number_of_times(fleet: Fleet) -> None:
    said: list[str] = []
    url = f"http://127.0.0.1:{_closed_port()}/cache"
    env = {**fleet.builder, "NIX_CONFIG": "connect-timeout = 2\ndownload-attempts = 1"}
    got = nixcache.push([fleet.top], url, fleet.secret, env=env, policy=FAST, say=said.append)
    assert not got.ok
    assert got.attempts == FAST.attempts
    assert len(said) == FAST.attempts - 1 and "retrying" in said[0]
    assert "127.0.0.1" in got.detail or "connect" in got.detail.lower(), got.detail


def test_a_cache_that_cannot_be_written_is_not_retried(fleet: Fleet) -> None:
    blocker = fleet.tmp / "a-file"
    blocker.write_text("not a folder\n")
    got = nixcache.push(
        [fleet.top], f"file://{blocker}/cache", fleet.secret, env=fleet.builder, policy=FAST
    )
    assert not got.ok and got.attempts == 1
    assert got.detail


def test_the_signing_key_never_appears_in_what_is_said(fleet: Fleet) -> None:
    said: list[str] = []
    outcomes = [
        nixcache.push([fleet.top], fleet.cache(), fleet.secret, env=fleet.builder, say=said.append),
        nixcache.push(
            [fleet.top],
            f"http://127.0.0.1:{_closed_port()}",
            fleet.secret,
            env={**fleet.builder, "NIX_CONFIG": "download-attempts = 1"},
            policy=FAST,
            say=said.append,
        ),
        nixcache.push(
            ["/not/a/store/path"], fleet.cache(), fleet.secret, env=fleet.builder, say=said.append
        ),
        nixcache.push(
            [fleet.top], fleet.cache(), fleet.secret + "x", env=fleet.builder, say=said.append
        ),
    ]
    secret_half = fleet.secret.partition(":")[2]
    text = "\n".join([*said, *(o.detail for o in outcomes)])
    assert secret_half not in text and fleet.secret not in text
    assert not outcomes[1].ok and not outcomes[2].ok
    assert "not NAME:BASE64" in outcomes[3].detail
    # No key file is left behind.
    assert not list(Path(fleet.tmp).glob("**/signing-key"))


def test_the_redactor_hides_the_key_and_its_secret_half() -> None:
    key = "fleet-1:" + "A" * 86 + "=="
    redact = nixcache._redactor(key)
    assert redact(f"x {key} y {'A' * 86}== z") == "x *** y *** z"
