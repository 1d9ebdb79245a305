"""The flox double refuses what the real flox refuses (tests/doubles/flox/README.md lists each
rule and the flox source it was read from). Every test runs the double as a program, in a real
git checkout with a real bare remote, and builds with the real nix-instantiate / nix-store."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.variants import expand
from tests.conftest import REPO_ROOT

DOUBLE_DIR = REPO_ROOT / "tests" / "doubles" / "flox"
FIXTURES = DOUBLE_DIR / "fixtures"
PIN = "6a030d535719c5190187c4cec156f335e95e3211"  # torch 2.9.1 in the fixture nixpkgs
FLOX_OWN = "46db2e09e1d3f113a13c0d7b81e2f221c63b8ce9"  # torch 2.7.0 in the fixture nixpkgs

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None or shutil.which("git") is None,
    reason="needs nix-bin and git",
)

# A recipe that keeps to the door: its one argument is fetchPinnedNixpkgs, with a default.
GOOD = """\
{ fetchPinnedNixpkgs ? import ../../nix/fetch-nixpkgs.nix }:
let
  pkgs = import (fetchPinnedNixpkgs { rev = "PIN"; sha256 = null; }) { };
  torch = pkgs.python313Packages.torch;
in
derivation {
  name = "NAME-${torch.version}";
  system = builtins.currentSystem;
  builder = "/bin/sh";
  args = [ "-c" "echo ${torch} > $out" ];
}
""".replace("PIN", PIN)

# Asks for `pkgs`: flox fills it from ITS nixpkgs, so this builds flox's torch, silently.
TAKES_PKGS = """\
{ pkgs }:
derivation {
  name = "NAME-${pkgs.python313Packages.torch.version}";
  system = builtins.currentSystem;
  builder = "/bin/sh";
  args = [ "-c" "echo ${pkgs.python313Packages.torch} > $out" ];
}
"""

# An argument that is no nixpkgs attribute and has no default: callPackage refuses it.
NO_DEFAULT = "{ pinnedPkgs }: pinnedPkgs.python313Packages.torch\n"

# A shared builder placed under .flox/pkgs/lib/: NEF makes it package `lib.torch-cpu`.
BUILDER = "{ pkgs, pname }: pkgs.python313Packages.torch\n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def recipe(name: str, text: str = GOOD) -> str:
    return text.replace("NAME", name)


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """A checkout with a flox environment, committed and pushed to a bare remote (upstream
    set), holding `files` besides env.json, the manifest and its lock."""
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    _git(tmp_path, "clone", "-q", str(remote), str(work))
    base = {
        ".flox/env.json": '{"name": "work", "version": 1}\n',
        ".flox/env/manifest.toml": 'version = 1\n[install]\nhello.pkg-path = "hello"\n',
        ".flox/env/manifest.lock": '{"lockfile-version": 1}\n',
    }
    for name, text in {**base, **files}.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "environment")
    _git(work, "push", "-q", "-u", "origin", "main")
    return work


def double_environment(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that calls the double: PATH first, a log, a fake FloxHub,
    a private store, the fixture nixpkgs door; no CI and no token unless a test sets them."""
    env = {k: v for k, v in os.environ.items() if k not in {"CI", "FLOX_FLOXHUB_TOKEN"}}
    env.update(
        PATH=os.pathsep.join([str(DOUBLE_DIR), os.environ.get("PATH", "")]),
        FLOX_DOUBLE_LOG=str(tmp_path / "flox.log"),
        FLOX_DOUBLE_STATE=str(tmp_path / "floxhub"),
        FLOX_DOUBLE_STORE=str(tmp_path / "nix"),
        FLOX_DOUBLE_FETCH=str(FIXTURES / "fetch.nix"),
        FLOX_DOUBLE_NIXPKGS_REV=FLOX_OWN,
    )
    return env


def store_environment(env: dict[str, str]) -> dict[str, str]:
    """`env` for a process whose Nix (nix-store in `ci-tools test`) must see the double's
    private store, as a runner's sees /nix/store (flox_double/nixstore.py's settings)."""
    root = Path(env["FLOX_DOUBLE_STORE"])
    return {
        **env,
        "NIX_STORE_DIR": str(root / "store"),
        "NIX_STATE_DIR": str(root / "var"),
        "NIX_LOG_DIR": str(root / "log"),
        "NIX_CONF_DIR": str(root / "etc"),
        "NIX_REMOTE": "",
    }


@pytest.fixture
def double_env(tmp_path: Path) -> dict[str, str]:
    return double_environment(tmp_path)


def flox(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["flox", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def listing(env: dict[str, str], cwd: Path) -> list[str]:
    done = flox(env, cwd, "_double", "list-packages")
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


# --- the environment ----------------------------------------------------------------------


def test_a_dot_flox_without_env_json_is_refused(tmp_path: Path, double_env: dict[str, str]) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    (work / ".flox" / "env.json").unlink()
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 1
    assert "unable to locate an 'env.json' in it" in done.stderr
    assert "verify that\n`.flox/env.json` is committed" in done.stderr
    assert not (work / "result-a").exists()


def test_no_environment_at_all_is_refused(tmp_path: Path, double_env: dict[str, str]) -> None:
    done = flox(double_env, tmp_path, "build")
    assert done.returncode == 1
    assert f"Did not find an environment in '{tmp_path}'" in done.stderr


def test_an_env_json_that_is_not_a_path_pointer_is_refused(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    (work / ".flox" / "env.json").write_text('{"name": "work"}\n')
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 1 and "Failed to parse environment pointer" in done.stderr


# --- naming packages as NEF does ----------------------------------------------------------


def test_listing_follows_dir_to_attrs(tmp_path: Path, double_env: dict[str, str]) -> None:
    work = make_repo(
        tmp_path,
        {
            ".flox/pkgs/a.nix": recipe("a"),
            ".flox/pkgs/b/default.nix": recipe("b"),
            ".flox/pkgs/b/helper.nix": "{ }: 1\n",  # inside a package folder: not a package
            ".flox/pkgs/lib/torch-cpu.nix": BUILDER,
            ".flox/pkgs/lib/deep/x.nix": BUILDER,
            ".flox/pkgs/README.md": "not nix\n",
            ".flox/pkgs/flake.nix": "{ }\n",
            ".flox/pkgs/docs/notes.txt": "a folder without a package\n",
        },
    )
    assert listing(double_env, work) == ["a", "b", "lib.deep.x", "lib.torch-cpu"]


def test_a_name_that_is_no_nix_identifier_is_quoted(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/2fast.nix": recipe("x")})
    assert listing(double_env, work) == ['"2fast"']


def test_an_untracked_recipe_is_listed_but_not_built(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    (work / ".flox" / "pkgs" / "new.nix").write_text(recipe("new"))
    assert listing(double_env, work) == ["a", "new"]
    done = flox(double_env, work, "build", "new")
    assert done.returncode == 1
    assert "The Nix expression for 'new' does not appear to be tracked by git." in done.stderr


def test_a_file_the_recipe_imports_must_be_tracked(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    importer = "{ fetchPinnedNixpkgs ? null }: import ../../nix/builder.nix\n"
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": importer})
    (work / "nix").mkdir()
    (work / "nix" / "builder.nix").write_text(recipe("a"))  # on disk, not in git
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 1
    assert "nix/builder.nix': No such file or directory" in done.stderr


def test_unknown_target_is_refused(tmp_path: Path, double_env: dict[str, str]) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    done = flox(double_env, work, "build", "b")
    assert done.returncode == 1 and "Target 'b' not found." in done.stderr


def test_no_package_at_all_is_refused(tmp_path: Path, double_env: dict[str, str]) -> None:
    work = make_repo(tmp_path, {})
    done = flox(double_env, work, "build")
    assert done.returncode == 1 and "No packages found to build." in done.stderr


# --- building: callPackage, the door, the private store -----------------------------------


def test_build_instantiates_and_realises_leaving_result(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 0, done.stderr
    out = (work / "result-a").resolve()
    assert out.parent == tmp_path / "nix" / "store"
    assert out.name.endswith("-a-2.9.1")  # the pinned torch
    torch = Path(out.read_text().strip())
    assert torch.read_text() == "torch 2.9.1\n"


def test_an_argument_named_like_a_nixpkgs_attribute_gets_flox_nixpkgs(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a", TAKES_PKGS)})
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 0, done.stderr
    # Built, silently, against flox's own nixpkgs: the version is not the pin's.
    assert (work / "result-a").resolve().name.endswith("-a-2.7.0")


def test_an_argument_without_default_or_attribute_is_an_error(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": NO_DEFAULT})
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 1
    assert 'Function called without required argument "pinnedPkgs"' in done.stderr
    assert not (work / "result-a").exists()


def test_an_evaluation_error_is_a_build_failure_with_nix_message(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    broken = "{ fetchPinnedNixpkgs ? null }: cudaPackages_13_9.cudnn\n"
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": broken})
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 1
    assert "undefined variable 'cudaPackages_13_9'" in done.stderr
    assert "Build of 'a' failed." in done.stderr


def test_an_unknown_pin_is_refused_by_the_nixpkgs_door(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a").replace(PIN, "0" * 40)})
    done = flox(double_env, work, "build", "a")
    assert done.returncode == 1 and "unknown nixpkgs revision" in done.stderr


def test_build_without_names_builds_everything_and_fails_on_a_package_set(
    tmp_path: Path, double_env: dict[str, str]
) -> None:
    work = make_repo(
        tmp_path, {".flox/pkgs/a.nix": recipe("a"), ".flox/pkgs/lib/torch-cpu.nix": BUILDER}
    )
    done = flox(double_env, work, "build")
    assert done.returncode == 1
    assert (work / "result-a").exists()
    assert 'Function called without required argument "pname"' in done.stderr
    assert "Build of 'lib.torch-cpu' failed." in done.stderr


# --- logging and injected failures --------------------------------------------------------


def _log(env: dict[str, str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(env["FLOX_DOUBLE_LOG"]).read_text().splitlines()]


def test_every_call_is_logged_with_argv_and_cwd(tmp_path: Path, double_env: dict[str, str]) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    flox(double_env, work, "build", "a")
    flox(double_env, tmp_path, "show", "acme/a")
    assert _log(double_env) == [
        {"argv": ["build", "a"], "cwd": str(work)},
        {"argv": ["show", "acme/a"], "cwd": str(tmp_path)},
    ]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("eval", "error: undefined variable 'cudaPackages_13_9'"),
        ("build", "ninja: build stopped: subcommand failed."),
        ("transient", "HTTP error 503"),
    ],
)
def test_injected_failures(
    tmp_path: Path, double_env: dict[str, str], mode: str, message: str
) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    done = flox({**double_env, "FLOX_DOUBLE_FAIL": f"a={mode}"}, work, "build", "a")
    assert done.returncode == 1 and message in done.stderr
    assert not (work / "result-a").exists()


def test_transient_n_fails_the_first_n_attempts(tmp_path: Path, double_env: dict[str, str]) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    env = {**double_env, "FLOX_DOUBLE_FAIL": "a=transient:2"}
    codes = [flox(env, work, "build", "a").returncode for _ in range(3)]
    assert codes == [1, 1, 0]


@pytest.mark.parametrize("spec", ["a", "a=oops", "=eval", "a=transient:0"])
def test_a_bad_fault_spec_is_exit_2(tmp_path: Path, double_env: dict[str, str], spec: str) -> None:
    work = make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})
    done = flox({**double_env, "FLOX_DOUBLE_FAIL": spec}, work, "build", "a")
    assert done.returncode == 2 and "FLOX_DOUBLE_FAIL" in done.stderr


# --- publish ------------------------------------------------------------------------------


@pytest.fixture
def published_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path, {".flox/pkgs/a.nix": recipe("a")})


def test_publish_records_org_name_and_commit_and_show_reads_it(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    done = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 0, done.stderr
    assert "Use 'flox install acme/a' to install it." in done.stdout
    head = _git(published_repo, "rev-parse", "HEAD").strip()
    state = json.loads((Path(double_env["FLOX_DOUBLE_STATE"]) / "floxhub.json").read_text())
    assert [b["rev"] for b in state["acme"]["a"]] == [head]
    shown = flox(double_env, published_repo, "show", "acme/a")
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[:3] == [
        "acme/a - <no description provided>",
        "Catalog: acme",
        "Latest:  acme/a@2.9.1",
    ]
    other = flox(double_env, published_repo, "show", "other/a")
    assert other.returncode == 1
    assert "no packages matched this pkg-path: 'other/a'" in other.stderr
    assert not (published_repo / "result-a").exists()  # publish builds in its own clone


def test_publish_of_the_same_commit_again_is_deduplicated(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    assert flox(double_env, published_repo, "publish", "-o", "acme", "a").returncode == 0
    again = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert again.returncode == 0
    assert "Package already published." in again.stdout
    head = _git(published_repo, "rev-parse", "HEAD").strip()
    assert f"Source revision: {head}" in again.stdout
    # A new pushed commit is a new build: published again.
    _git(published_repo, "commit", "-q", "--allow-empty", "-m", "next")
    _git(published_repo, "push", "-q")
    third = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert third.returncode == 0 and "published successfully" in third.stdout


def test_publish_refuses_an_unlocked_environment(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    _git(published_repo, "rm", "-q", ".flox/env/manifest.lock")
    _git(published_repo, "commit", "-q", "-m", "no lock")
    _git(published_repo, "push", "-q")
    done = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 1
    assert "unsupported state for publishing: Environment must be locked." in done.stderr


def test_publish_refuses_a_dirty_checkout(published_repo: Path, double_env: dict[str, str]) -> None:
    (published_repo / ".flox" / "pkgs" / "a.nix").write_text(recipe("a") + "\n")
    done = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 1
    assert "Build repository must be clean, but has dirty tracked files." in done.stderr


def test_publish_refuses_untracked_environment_files(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    (published_repo / ".flox" / "env" / "extra.toml").write_text("x = 1\n")
    done = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 1
    assert "environment files are not tracked by git:\n- .flox/env/extra.toml" in done.stderr


def test_publish_refuses_a_commit_not_on_the_remote(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    _git(published_repo, "commit", "-q", "--allow-empty", "-m", "local only")
    done = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 1
    assert "Local revision is not present on remote 'origin/main'." in done.stderr
    assert not (Path(double_env["FLOX_DOUBLE_STATE"]) / "floxhub.json").exists()


def test_publish_refuses_a_detached_head(published_repo: Path, double_env: dict[str, str]) -> None:
    _git(published_repo, "checkout", "-q", "--detach", "HEAD")
    done = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 1
    assert "detached HEAD state and has no upstream remote configured" in done.stderr


def test_publish_refuses_a_branch_without_upstream(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    _git(published_repo, "checkout", "-q", "-b", "topic")
    done = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 1
    assert "Current branch 'topic' has no upstream remote configured." in done.stderr
    assert "git branch --set-upstream-to=origin/topic" in done.stderr


def test_publish_refuses_an_unknown_package(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    done = flox(double_env, published_repo, "publish", "-o", "acme", "nope")
    assert done.returncode == 1 and "Target 'nope' not found." in done.stderr


def test_publish_in_ci_needs_the_token(published_repo: Path, double_env: dict[str, str]) -> None:
    done = flox({**double_env, "CI": "true"}, published_repo, "publish", "-o", "acme", "a")
    assert done.returncode == 1
    assert "You are not logged in to FloxHub." in done.stderr
    assert "$FLOX_FLOXHUB_TOKEN" in done.stderr
    env = {**double_env, "CI": "true", "FLOX_FLOXHUB_TOKEN": "flox-secret-token"}
    ok = flox(env, published_repo, "publish", "-o", "acme", "a")
    assert ok.returncode == 0, ok.stderr
    assert "flox-secret-token" not in ok.stdout + ok.stderr


def test_publish_checks_authentication_before_the_lock(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    (published_repo / ".flox" / "env" / "manifest.lock").unlink()
    done = flox({**double_env, "CI": "1"}, published_repo, "publish", "-o", "acme", "a")
    assert "not logged in" in done.stderr and "must be locked" not in done.stderr


def test_publish_upload_failure_is_transient_and_records_nothing(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    env = {**double_env, "FLOX_DOUBLE_FAIL": "a=transient:1"}
    first = flox(env, published_repo, "publish", "-o", "acme", "a")
    assert first.returncode == 1 and "503 Service Unavailable" in first.stderr
    assert flox(double_env, published_repo, "show", "acme/a").returncode == 1
    assert flox(env, published_repo, "publish", "-o", "acme", "a").returncode == 0


# The filter ci-tools sets (ci_tools/ship/floxlog.py), spelled out: the double must answer
# what flox answers to this text, whatever ci-tools' constant becomes.
PUBLISH_DEBUG = "warn,flox::utils::message=info,flox_rust_sdk::providers::publish=debug"
UPLOAD_EVENT = "flox_rust_sdk::providers::publish: Uploading store path to cache store_path="


def test_publish_names_its_upload_only_in_a_debug_record_the_filter_lets_through(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    """logger.rs: a pipe gets no progress span; RUST_LOG (when it parses) replaces the
    default filter, under which the publish provider's debug events are not logged."""
    plain = flox(double_env, published_repo, "publish", "-o", "acme", "a")
    assert plain.returncode == 0 and "Uploading" not in plain.stderr
    _git(published_repo, "commit", "-q", "--allow-empty", "-m", "next")
    _git(published_repo, "push", "-q")
    shown = flox({**double_env, "RUST_LOG": PUBLISH_DEBUG}, published_repo, "publish", "a")
    assert shown.returncode == 0 and "published successfully" in shown.stdout
    [line] = [x for x in shown.stderr.splitlines() if UPLOAD_EVENT in x]
    path = line.split("store_path=")[1].split()[0]
    assert Path(path).name.endswith("-a-2.9.1") and "\x1b" not in line
    assert re.match(r"\d\d:\d\d:\d\d\.\d{3} DEBUG publish:upload_store_path: ", line)


@pytest.mark.parametrize(
    ("rust_log", "messages"),
    [("off", False), ("flox=debug,", True), ("warn,flox::utils=info", True), ("x=[", True)],
)
def test_rust_log_decides_what_flox_shows(
    published_repo: Path, double_env: dict[str, str], rust_log: str, messages: bool
) -> None:
    """EnvFilter: a prefix of the target matches (`flox` covers `flox_rust_sdk`), the
    longest wins; an invalid RUST_LOG leaves flox's default (logger.rs `update_filters`)."""
    done = flox({**double_env, "RUST_LOG": rust_log}, published_repo, "publish", "a")
    assert done.returncode == 0
    assert ("published successfully" in done.stdout) is messages
    assert (UPLOAD_EVENT in done.stderr) is (rust_log == "flox=debug,")


def test_forced_colours_colour_the_log_records_on_a_pipe(
    published_repo: Path, double_env: dict[str, str]
) -> None:
    """supports-color 3.0.2: FORCE_COLOR wins over NO_COLOR and over a pipe."""
    env = {**double_env, "RUST_LOG": PUBLISH_DEBUG, "FORCE_COLOR": "1", "NO_COLOR": "1"}
    done = flox(env, published_repo, "publish", "a")
    assert done.returncode == 0 and UPLOAD_EVENT not in done.stderr
    assert "\x1b[3mstore_path\x1b[0m\x1b[2m=\x1b[0m" in done.stderr


# --- the real repository (live once the recipes branch brings nix/fetch-nixpkgs.nix) -------


def _recipes_branch(repo: Path) -> str:
    header = next((repo / ".flox" / "pkgs").glob("*.nix")).read_text(encoding="utf-8")
    match = re.search(r"\(branch ([\w.-]+)\)", header)
    assert match, "a generated recipe names its branch in its header"
    return match.group(1)


@pytest.mark.skipif(
    not (REPO_ROOT / "nix" / "fetch-nixpkgs.nix").exists(),
    reason="the recipes branch (nix/fetch-nixpkgs.nix, the nixpkgs double) is not merged yet",
)
def test_the_real_repository(tmp_path: Path, double_env: dict[str, str]) -> None:
    env = {k: v for k, v in double_env.items() if k not in {"FLOX_DOUBLE_FETCH"}}
    env.pop("FLOX_DOUBLE_NIXPKGS_REV")
    catalog = load_catalog(REPO_ROOT / "catalog.yaml", display_name="catalog.yaml")
    branch = _recipes_branch(REPO_ROOT)
    variants = expand(catalog, branch)
    assert listing(env, REPO_ROOT) == sorted(v.name for v in variants)
    # One recipe of each kind this host can realise (a recipe for another platform fails to
    # realise here as it would under the real flox), built in a clone so no result link lands
    # in the checkout.
    host = (
        subprocess.run(
            ["nix-instantiate", "--eval", "--json", "-E", "builtins.currentSystem"],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .strip('"')
    )
    copy = tmp_path / "copy"
    _git(tmp_path, "clone", "-q", str(REPO_ROOT), str(copy))
    kinds: dict[tuple[str, str], str] = {}
    for variant in variants:
        if str(variant.platform) == host:
            kinds.setdefault((variant.package.name, str(variant.kind)), variant.name)
    assert len(kinds) >= 2, f"no buildable recipe for {host} on branch {branch}"
    for name in sorted(kinds.values()):
        done = flox(env, copy, "build", name)
        assert done.returncode == 0, f"{name}:\n{done.stderr}"
        assert (copy / f"result-{name}").resolve().is_relative_to(tmp_path / "nix" / "store")
