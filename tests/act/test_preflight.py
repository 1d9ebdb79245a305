"""The runners' preflight (.github/scripts/preflight.py): one escaped `::error::` per problem."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.act.harness import REPO_ROOT

SCRIPT = REPO_ROOT / ".github" / "scripts" / "preflight.py"


def fake_bin(folder: Path, name: str, output: str) -> None:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{output}'\n")
    path.chmod(0o755)


def preflight(tmp: Path, inventory: str, bins: Path) -> subprocess.CompletedProcess[str]:
    (tmp / "runners.yaml").write_text(inventory)
    env = {**os.environ, "PATH": str(bins)}  # only the fakes: this machine has Nix
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--inventory", str(tmp / "runners.yaml")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


INVENTORY = 'preflight:\n  flox: "1.14"\n  min_free_gb: 1\n  store: {store}\nbuilders: {{}}\n'


def test_a_runner_in_order_passes(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "1.14.2")
    fake_bin(bins, "nix", "nix (Nix) 2.24.0")
    fake_bin(bins, "nix-store", "")
    done = preflight(tmp_path, INVENTORY.format(store=tmp_path), bins)
    assert done.returncode == 0, done.stdout
    assert "::error::" not in done.stdout


def test_old_flox_no_nix_and_a_full_disk_are_each_an_error(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "1.13.9%\nnext")
    # 10^6 GiB: more than any disk; nix-store absent, so no garbage collection either.
    done = preflight(
        tmp_path,
        INVENTORY.format(store=tmp_path).replace("min_free_gb: 1", "min_free_gb: 1000000"),
        bins,
    )
    assert done.returncode == 1
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == 3, done.stdout
    assert "flox 1.13.9%25%0Anext is older than 1.14" in errors[0]  # escaped, one line
    assert "Nix is not on PATH" in errors[1]
    assert "a build needs 1000000 GiB (runners.yaml preflight.min_free_gb)" in errors[2]


def test_missing_flox_is_named(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "nix", "nix (Nix) 2.24.0")
    fake_bin(bins, "nix-store", "")
    done = preflight(tmp_path, INVENTORY.format(store=tmp_path), bins)
    assert done.returncode == 1
    assert "::error::flox is not on PATH; this runner needs flox >= 1.14" in done.stdout


def test_short_disk_collects_garbage_first(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "1.14.0")
    fake_bin(bins, "nix", "nix (Nix) 2.24.0")
    log = tmp_path / "gc.log"
    (bins / "nix-store").write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    (bins / "nix-store").chmod(0o755)
    inventory = INVENTORY.format(store=tmp_path).replace("min_free_gb: 1", "min_free_gb: 1000000")
    done = preflight(tmp_path, inventory, bins)
    assert done.returncode == 1
    assert log.read_text().startswith("--gc --max-freed ")


def fake_runner(folder: Path, output: str) -> Path:
    """An Actions runner's folder whose bin/Runner.Listener --version prints `output`."""
    folder.mkdir()
    fake_bin(folder / "bin", "Runner.Listener", output)
    return folder


def runner_preflight(tmp: Path, runner: Path) -> subprocess.CompletedProcess[str]:
    bins = tmp / "bin"
    for name, output in (("flox", "1.14.2"), ("nix", "nix (Nix) 2.24.0"), ("nix-store", "")):
        fake_bin(bins, name, output)
    (tmp / "runners.yaml").write_text(INVENTORY.format(store=tmp))
    argv = [sys.executable, str(SCRIPT), "--inventory", str(tmp / "runners.yaml")]
    return subprocess.run(
        [*argv, "--runner-dir", str(runner)],
        env={**os.environ, "PATH": str(bins)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_current_runner_passes(tmp_path: Path) -> None:
    done = runner_preflight(tmp_path, fake_runner(tmp_path / "actions-runner", "2.330.0"))
    assert done.returncode == 0, done.stdout
    assert "flox, Nix, free disk and the Actions runner are in order" in done.stdout


def test_an_old_runner_fails_on_the_host(tmp_path: Path) -> None:
    done = runner_preflight(tmp_path, fake_runner(tmp_path / "actions-runner", "2.326.0"))
    assert done.returncode == 1
    assert "::error::the Actions runner in " in done.stdout
    assert "is 2.326.0; the pinned actions run on Node 24" in done.stdout


def test_a_folder_without_a_runner_is_bad_input(tmp_path: Path) -> None:
    done = runner_preflight(tmp_path, tmp_path / "nowhere")
    assert done.returncode == 2
    assert "nowhere: no bin/Runner.Listener there" in done.stdout
