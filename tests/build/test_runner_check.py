"""`ci-tools preflight` (ci_tools/build/runner_check.py): one escaped `::error::` per problem.

Was .github/scripts/preflight.py, which an adopting repository does not have (issue 30 item 1).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import CliRunner

BUILDERS = "builders:\n  x86_64-linux:\n    labels: [self-hosted]\n"
INVENTORY = 'preflight:\n  flox: "1.14"\n  min_free_gb: {gb}\n' + BUILDERS


def fake_bin(folder: Path, name: str, script: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f"#!/bin/sh\n{script}\n")
    (folder / name).chmod(0o755)


def preflight(
    run_cli: CliRunner, tmp: Path, bins: Path, gb: int = 1, inventory: str = ""
) -> subprocess.CompletedProcess[str]:
    """runners.yaml found in the folder it runs in; PATH only the fakes (this machine has Nix)."""
    (tmp / "runners.yaml").write_text(inventory or INVENTORY.format(gb=gb))
    return run_cli("preflight", "--store", str(tmp), cwd=tmp, env={"PATH": str(bins)})


def test_a_runner_in_order_passes(run_cli: CliRunner, tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "echo 1.14.2")
    fake_bin(bins, "nix", "echo 'nix (Nix) 2.24.0'")
    fake_bin(bins, "nix-store", "true")
    done = preflight(run_cli, tmp_path, bins)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "::error::" not in done.stdout
    assert "in order" in done.stdout


def test_old_flox_no_nix_and_a_full_disk_are_each_an_error(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "printf '1.13.9%%\\nnext'")
    # 10^6 GiB: more than any disk; nix-store absent, so no garbage collection either.
    done = preflight(run_cli, tmp_path, bins, gb=1_000_000)
    assert done.returncode == 1
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == 3, done.stdout
    assert "flox 1.13.9%25%0Anext is older than 1.14" in errors[0]  # escaped, one line
    assert "Nix is not on PATH" in errors[1]
    assert "a build needs 1000000 GiB (runners.yaml preflight.min_free_gb)" in errors[2]


def test_missing_flox_is_named(run_cli: CliRunner, tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "nix", "echo 'nix (Nix) 2.24.0'")
    fake_bin(bins, "nix-store", "true")
    done = preflight(run_cli, tmp_path, bins)
    assert done.returncode == 1
    assert "::error::flox is not on PATH; this runner needs flox >= 1.14" in done.stdout


def test_short_disk_collects_garbage_first(run_cli: CliRunner, tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "echo 1.14.0")
    fake_bin(bins, "nix", "echo 'nix (Nix) 2.24.0'")
    log = tmp_path / "gc.log"
    fake_bin(bins, "nix-store", f'echo "$@" >> {log}')
    done = preflight(run_cli, tmp_path, bins, gb=1_000_000)
    assert done.returncode == 1
    assert log.read_text().startswith("--gc --max-freed ")
    assert "collecting Nix garbage" in done.stdout


def test_a_bad_inventory_is_bad_input_at_its_line(run_cli: CliRunner, tmp_path: Path) -> None:
    """The old script read `min_free_gb: lots` with int() and died with a traceback."""
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "echo 1.14.0")
    done = preflight(
        run_cli, tmp_path, bins, inventory="preflight:\n  min_free_gb: lots\n" + BUILDERS
    )
    assert done.returncode == 2
    assert "runners.yaml:2: preflight.min_free_gb must be a whole number" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_inventory_named_on_the_command_line_is_read(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    """build-stack.yml runs `ci-tools preflight --inventory runners.yaml` (the old
    .github/scripts/preflight.py passed its arguments through): the file named is the one
    read, wherever the command runs."""
    bins = tmp_path / "bin"
    fake_bin(bins, "flox", "echo 1.14.0")
    inventory = tmp_path / "fleet" / "runners.yaml"
    inventory.parent.mkdir()
    inventory.write_text("preflight:\n  min_free_gb: lots\n" + BUILDERS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_cli(
        "preflight", "--inventory", str(inventory), "--store", str(tmp_path),
        cwd=elsewhere, env={"PATH": str(bins)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "preflight.min_free_gb must be a whole number" in done.stderr


# --- the Actions runner's version, checked on the host (issue 28 item 7) ----------------------


def _runner_preflight(
    run_cli: CliRunner, tmp: Path, runner: Path
) -> subprocess.CompletedProcess[str]:
    bins = tmp / "bin"
    fake_bin(bins, "flox", "echo 1.14.2")
    fake_bin(bins, "nix", "echo 'nix (Nix) 2.24.0'")
    fake_bin(bins, "nix-store", "true")
    (tmp / "runners.yaml").write_text(INVENTORY.format(gb=1))
    return run_cli(
        "preflight",
        "--store",
        str(tmp),
        "--runner-dir",
        str(runner),
        cwd=tmp,
        env={"PATH": str(bins)},
    )


def _fake_runner(folder: Path, version: str) -> Path:
    """An Actions runner's folder whose bin/Runner.Listener --version prints `version`."""
    folder.mkdir()
    fake_bin(folder / "bin", "Runner.Listener", f"echo {version}")
    return folder


def test_a_current_actions_runner_passes(run_cli: CliRunner, tmp_path: Path) -> None:
    done = _runner_preflight(run_cli, tmp_path, _fake_runner(tmp_path / "runner", "2.330.0"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "flox, Nix, free disk and the Actions runner are in order" in done.stdout


def test_an_old_actions_runner_fails_on_the_host(run_cli: CliRunner, tmp_path: Path) -> None:
    done = _runner_preflight(run_cli, tmp_path, _fake_runner(tmp_path / "runner", "2.326.0"))
    assert done.returncode == 1
    assert "::error::the Actions runner in " in done.stdout
    assert "is 2.326.0; the pinned actions run on Node 24" in done.stdout


def test_a_folder_without_an_actions_runner_is_bad_input(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    done = _runner_preflight(run_cli, tmp_path, tmp_path / "nowhere")
    assert done.returncode == 2
    assert "nowhere: no bin/Runner.Listener there" in done.stderr
