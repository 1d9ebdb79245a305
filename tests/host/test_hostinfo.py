"""hostinfo: parsing nvidia-smi and /proc/cpuinfo, and reading them through a fake nvidia-smi."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError
from ci_tools.host import hostcpu, hostinfo
from ci_tools.host.detect import HostGpu
from tests.conftest import DATA

H100 = HostGpu(name="NVIDIA H100 80GB HBM3", capability="9.0")


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("nvidia-smi-h100.txt", (H100,)),
        ("nvidia-smi-8x-h100.txt", (H100,) * 8),
        (
            "nvidia-smi-mixed.txt",
            (
                HostGpu(name="NVIDIA H100 PCIe", capability="9.0"),
                HostGpu(name="NVIDIA RTX A5000", capability="8.6"),
                HostGpu(name="NVIDIA H100 PCIe", capability="9.0"),
            ),
        ),
        # The capability is the last field, so a comma in the name stays in the name.
        (
            "nvidia-smi-comma-name.txt",
            (HostGpu(name="NVIDIA H100 80GB HBM3, rev 2", capability="9.0"),),
        ),
        ("nvidia-smi-na.txt", (HostGpu(name="NVIDIA Graphics Device", capability=None),)),
        ("nvidia-smi-gb10.txt", (HostGpu(name="NVIDIA GB10", capability="12.1"),)),
    ],
)
def test_parse_nvidia_smi(fixture: str, expected: tuple[HostGpu, ...]) -> None:
    assert hostinfo.parse_nvidia_smi((DATA / fixture).read_text()) == expected


# nvidia-smi's csv quotes no value: a name holding a comma is printed as it is, and only the
# count of fields the query asks for tells it from another column.
COMMA_NAMES = ("NVIDIA H100 80GB HBM3, rev A", "NVIDIA GB10, rev 2", "a,b,c", "x, 12.1")


@pytest.mark.parametrize("name", COMMA_NAMES)
@pytest.mark.parametrize("capability", ["9.0", "12.1", "10.0", "[N/A]"])
@pytest.mark.parametrize("driver", ["580.65.06", "570", "[N/A]", "[Not Supported]"])
def test_a_name_keeps_its_commas_whatever_the_other_fields_hold(
    name: str, capability: str, driver: str
) -> None:
    """The fields `--query-gpu=name,compute_cap,driver_version` asks for, read from the right
    end: a capability that looks like a driver version (12.1) or a driver column nvidia-smi
    cannot fill ([N/A]) never moves the name's tail into the capability."""
    text = f"{name}, {capability}, {driver}\n"
    known = None if capability == "[N/A]" else capability
    assert hostinfo.parse_nvidia_smi(text) == (HostGpu(name=name, capability=known),)
    assert hostinfo.parse_driver(text) == (None if driver.startswith("[") else driver)


@pytest.mark.parametrize(
    "line",
    ["NVIDIA H100 80GB HBM3, 9.0", "NVIDIA GB10, 12.1", "9.0", "NVIDIA H100", ", 9.0"],
)
def test_a_line_without_the_fields_the_query_asks_for_is_refused(line: str) -> None:
    """nvidia-smi answers every field of the query on each line (or fails): a line with fewer
    is no answer to it, and guessing which field is missing misreads a name with a comma."""
    for parse in (hostinfo.parse_nvidia_smi, hostinfo.parse_driver):
        with pytest.raises(InputError) as refused:
            parse(f"NVIDIA H100 80GB HBM3, 9.0, 580.65.06\n{line}\n")
        message = str(refused.value)
        assert f'"{line}"' in message and "name,compute_cap,driver_version" in message
        assert "--gpu-cc X.Y" in message


@pytest.mark.parametrize(
    ("text", "driver"),
    [
        ((DATA / "nvidia-smi-h100.txt").read_text(), "580.159.04"),
        ((DATA / "nvidia-smi-comma-name.txt").read_text(), "580.159.04"),
        ((DATA / "nvidia-smi-na.txt").read_text(), "580.65.06"),
        # An nvidia-smi that prints something else than a driver version in the column.
        ("NVIDIA H100 80GB HBM3, 9.0, [N/A]\n", None),
        ("", None),
    ],
)
def test_parse_driver(text: str, driver: str | None) -> None:
    assert hostinfo.parse_driver(text) == driver


@pytest.mark.parametrize("text", ["", "\n\n", "No devices were found\n"])
def test_parse_nvidia_smi_without_gpus(text: str) -> None:
    assert hostinfo.parse_nvidia_smi(text) == ()


def test_parse_nvidia_smi_keeps_an_unreadable_capability_as_unknown() -> None:
    assert hostinfo.parse_nvidia_smi("Some GPU, N/A, 580.65.06\n, 9.0, 580.65.06\n") == (
        HostGpu(name="Some GPU", capability=None),
        HostGpu(name=None, capability="9.0"),
    )


@pytest.mark.parametrize(
    "capability",
    ["\u0669.\u0660", "\uff19.\uff10", "1" * 5000 + ".0", "9.0.1", "-9.0", "9.0\u00b2"],
)
def test_parse_nvidia_smi_refuses_a_capability_of_other_digits(capability: str) -> None:
    """Issue 20 item 10: 5000 digits crashed detect (int() refuses them), Arabic-Indic and
    fullwidth digits were read as 9.0."""
    with pytest.raises(InputError) as refused:
        hostinfo.parse_nvidia_smi(f"NVIDIA H100, {capability}, 580.65.06\n")
    message = str(refused.value)
    assert 'for GPU "NVIDIA H100"' in message and "--gpu-cc X.Y" in message
    assert len(message) < 400


@pytest.mark.parametrize("capability", ["[N/A]", "N/A", "[Not Supported]", ""])
def test_parse_nvidia_smi_reads_a_capability_without_digits_as_unknown(capability: str) -> None:
    assert hostinfo.parse_nvidia_smi(f"Some GPU, {capability}, 580.65.06\n") == (
        HostGpu(name="Some GPU", capability=None),
    )


# fixture -> (flags that must be there, flags that must not)
CPUINFO = {
    "sapphire-rapids": ({"avx2", "avx512f", "avx512bw", "avx512_bf16", "avx512_vnni"}, set()),
    "zen4": ({"avx2", "avx512f", "avx512vl", "avx512_bf16", "avx512_vnni"}, {"vmx"}),
    "haswell": ({"avx", "avx2", "fma", "f16c"}, {"avx512f"}),
    "sandy-bridge": ({"avx"}, {"avx2", "f16c", "fma"}),
    "graviton2": ({"fphp", "asimdhp", "asimddp"}, {"sve", "sve2"}),
    "graviton3": ({"fphp", "asimdhp", "asimddp", "sve"}, {"sve2"}),
    "grace": ({"fphp", "asimdhp", "asimddp", "sve", "sve2"}, set()),
}


@pytest.mark.parametrize("name", sorted(CPUINFO))
def test_parse_cpu_flags_fixtures(name: str) -> None:
    present, absent = CPUINFO[name]
    flags = hostcpu.parse_cpuinfo((DATA / f"cpuinfo-{name}.txt").read_text())
    assert present <= flags
    assert not (absent & flags)


def test_parse_cpu_flags_ignores_other_lines_that_end_in_flags() -> None:
    # Intel's `vmx flags` line lists virtualisation features, not instruction sets.
    flags = hostcpu.parse_cpuinfo((DATA / "cpuinfo-sapphire-rapids.txt").read_text())
    assert "ept_x_only" not in flags
    assert "GenuineIntel" not in flags


def test_parse_cpu_flags_keeps_only_what_every_processor_has() -> None:
    text = (
        "processor\t: 0\nFeatures\t: fp asimd fphp asimdhp asimddp sve sve2\n\n"
        "processor\t: 1\nFeatures\t: fp asimd fphp asimdhp asimddp\n"
    )
    assert hostcpu.parse_cpuinfo(text) == frozenset({"fp", "asimd", "fphp", "asimdhp", "asimddp"})


def test_parse_cpu_flags_without_flag_lines() -> None:
    assert hostcpu.parse_cpuinfo("processor\t: 0\nmodel name\t: Something\n") == frozenset()


def test_read_cpu_flags_from_a_file() -> None:
    reading = hostinfo.read_cpu_flags(DATA / "cpuinfo-haswell.txt")
    assert "avx2" in reading.flags
    assert reading.warning is None


def test_read_cpu_flags_missing_file_warns(tmp_path: Path) -> None:
    reading = hostinfo.read_cpu_flags(tmp_path / "cpuinfo")
    assert reading.flags == frozenset()
    assert reading.warning is not None
    assert "--cpu-flags" in reading.warning


def test_read_cpu_flags_without_flags_warns(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\n")
    reading = hostinfo.read_cpu_flags(path)
    assert reading.warning is not None
    assert "no flags/Features line" in reading.warning


def _fake_nvidia_smi(bin_dir: Path, *, stdout: str, code: int = 0, stderr: str = "") -> Path:
    """An nvidia-smi that records its arguments and prints what a real one would."""
    bin_dir.mkdir(exist_ok=True)
    argv_file = bin_dir / "argv"
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" > {shlex.quote(str(argv_file))}\n'
        f"printf '%s' {shlex.quote(stdout)}\n"
        f"printf '%s' {shlex.quote(stderr)} >&2\n"
        f"exit {code}\n"
    )
    script.chmod(0o755)
    return argv_file


def test_read_gpus_asks_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = _fake_nvidia_smi(tmp_path, stdout=(DATA / "nvidia-smi-8x-h100.txt").read_text())
    monkeypatch.setenv("PATH", str(tmp_path))
    reading = hostinfo.read_gpus()
    assert reading.gpus == (H100,) * 8
    assert reading.driver == "580.159.04"
    assert reading.warning is None
    assert argv.read_text().split() == list(hostinfo.NVIDIA_SMI_QUERY[1:])


def test_read_gpus_without_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    reading = hostinfo.read_gpus()
    assert reading.gpus == ()
    assert reading.note == "no NVIDIA GPU (nvidia-smi not found)"
    assert reading.warning is None


def test_read_gpus_no_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_nvidia_smi(tmp_path, stdout="No devices were found\n", code=6)
    monkeypatch.setenv("PATH", str(tmp_path))
    reading = hostinfo.read_gpus()
    assert reading.gpus == ()
    assert reading.note == "no NVIDIA GPU (nvidia-smi lists none)"
    assert reading.warning is None


def test_read_gpus_failing_means_no_gpu_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nvidia_smi(
        tmp_path,
        stdout="",
        stderr="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        code=9,
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    reading = hostinfo.read_gpus()
    assert reading.gpus == ()
    assert reading.warning is not None
    assert "exit 9: NVIDIA-SMI has failed" in reading.warning
    assert "--gpu-cc" in reading.warning


@pytest.mark.parametrize(
    ("system", "machine", "expected"),
    [
        ("Linux", "x86_64", "x86_64"),
        ("Linux", "AMD64", "x86_64"),
        ("Linux", "aarch64", "aarch64"),
        ("Linux", "arm64", "aarch64"),
        ("Darwin", "arm64", "arm64-darwin"),
        ("Darwin", "x86_64", "x86_64-darwin"),
        ("Linux", "ppc64le", "ppc64le"),
        ("Windows", "AMD64", "x86_64-windows"),
    ],
)
def test_normalize_machine(system: str, machine: str, expected: str) -> None:
    assert hostinfo.normalize_machine(system, machine) == expected


# --- issue 20 item 4: sizes ------------------------------------------------------------------


def test_a_huge_flags_line_is_not_split(tmp_path: Path) -> None:
    """A 100 MB cpuinfo line took 1.9 GB: the file is read within a bound, and a flags line
    far longer than any real one is not taken for one."""
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nflags\t\t: " + "a " * (hostcpu.MAX_FLAGS_LINE) + "\n")
    reading = hostinfo.read_cpu_flags(path)
    assert reading.flags == frozenset()
    assert reading.warning is not None and "no flags/Features line" in reading.warning


def test_a_cpuinfo_over_its_bound_is_refused_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_bytes(b"x" * (hostcpu.MAX_CPUINFO_BYTES + 1))
    reading = hostinfo.read_cpu_flags(path)
    assert reading.flags == frozenset()
    assert reading.warning is not None and "larger than" in reading.warning
    with pytest.raises(InputError, match="larger than"):
        hostcpu.read_cpu_flags(path)


def test_a_flood_from_nvidia_smi_is_no_gpu_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdout.write('H100, 9.0, 580.65.06\\n' * 10**6)\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    reading = hostinfo.read_gpus()
    assert reading.gpus == ()
    assert reading.warning is not None
    assert f"over {hostinfo.MAX_NVIDIA_SMI_BYTES} bytes" in reading.warning
