"""benchmarks/bench_size.py: a torch installation -> each SM's projected sizes at three levels.

A made-up site-packages with the shape of PyPI's CUDA torch (torch with libtorch_cuda.so and
another CUDA library, NVIDIA's cuBLAS wheel it requires, an extra it does not), and the real CPU
torch of this machine for the path without CUDA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_size
from tests.benchmarks.fatbins import ELF, PTX, container, elf, entry


def _dist(
    site: Path, name: str, version: str, files: dict[str, bytes], requires: list[str]
) -> None:
    for relative, data in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    record = [f"{relative},," for relative in files] + [
        f"{info.name}/METADATA,,",
        f"{info.name}/RECORD,,",
    ]
    (info / "RECORD").write_text("\n".join(record) + "\n")


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site-packages"
    cuda = elf(
        {
            ".text": bytes(1000),
            ".nv_fatbin": container(
                [entry(ELF, 80, 3000), entry(ELF, 90, 5000), entry(PTX, 90, 936)]
            ),
        }
    )
    linalg = elf({".nv_fatbin": container([entry(ELF, 80, 400), entry(ELF, 90, 336)])})
    nvrtc = elf({".nv_fatbin": container([entry(ELF, 90, 100)])})  # not libtorch_cuda*
    _dist(
        site,
        "torch",
        "2.11.0+cu130",
        {
            "torch/__init__.py": b"# torch\n",
            "torch/lib/libtorch_cuda.so": cuda,
            "torch/lib/libtorch_cuda_linalg.so": linalg,
            "torch/lib/libcaffe2_nvrtc.so": nvrtc,
            "torch/lib/libtorch_cpu.so": bytes(20000),
            "torchgen/__init__.py": b"",
        },
        [
            "nvidia-cublas==13.0; platform_system == 'Linux'",
            "opt-einsum>=3.3; extra == 'opt-einsum'",
        ],
    )
    cublas = elf({".nv_fatbin": container([entry(ELF, 80, 7000), entry(ELF, 90, 7000)])})
    _dist(site, "nvidia-cublas", "13.0", {"nvidia/cublas/lib/libcublas.so.13": cublas}, [])
    _dist(site, "opt-einsum", "3.4", {"opt_einsum/__init__.py": bytes(500)}, [])
    return site


def test_three_levels_per_sm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = _site(tmp_path)
    out = tmp_path / "size.json"
    assert bench_size.main(["--torch", str(site / "torch"), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    torch_dir = site / "torch"
    lib = torch_dir / "lib"
    cuda = (lib / "libtorch_cuda.so").stat().st_size + (
        lib / "libtorch_cuda_linalg.so"
    ).stat().st_size
    package = sum(p.stat().st_size for p in torch_dir.rglob("*") if p.is_file())
    rest = sum(
        p.stat().st_size
        for p in site.rglob("*")
        if p.is_file()
        and "torch/" not in str(p.relative_to(site)).replace("torchgen", "")
        and "opt_einsum" not in str(p)
    )
    assert data["torch"] == "2.11.0+cu130"
    assert data["requires"] == ["nvidia-cublas"]  # the extra is not installed by pip install torch
    assert data["now"] == {
        "cuda_libraries": cuda,
        "torch_package": package,
        "install": package + rest,
    }
    # sm90 alone drops sm80's entries: 64+3000 and 64+400 in torch, none in cuBLAS.
    assert data["sms"]["sm90"] == {
        "cuda_libraries": cuda - 3528,
        "torch_package": package - 3528,
        "install": package + rest - 3528,
    }
    # sm80 alone drops sm90's: 64+5000, 64+936 and 64+336 in libtorch_cuda*, 64+100 in nvrtc.
    assert data["sms"]["sm80"]["cuda_libraries"] == cuda - 6464
    assert data["sms"]["sm80"]["torch_package"] == package - 6464 - 164
    assert data["fatbin"]["other"] == {"sm80": 7064, "sm90": 7064}
    text = capsys.readouterr().out
    assert "PROJECTION" in text
    assert "sm90 alone" in text and "whole install: torch and nvidia-cublas" in text


def test_the_cpu_torch_of_this_machine_has_nothing_to_project(
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        torch_dir = bench_size.locate_torch()
    except bench_size.BadInput:
        pytest.skip("no torch here (pip install torch==2.13.0)")
    if list((torch_dir / "lib").glob("libtorch_cuda*.so")):
        pytest.skip("this torch is a CUDA build")
    assert bench_size.main([]) == 0
    text = capsys.readouterr().out
    assert "no GPU code in libtorch_cuda*.so" in text
    assert "nothing to project" in text


def test_bad_input_and_broken_fat_binaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench_size.main(["--torch", str(tmp_path)]) == 2
    assert "not a torch package" in capsys.readouterr().err
    site = _site(tmp_path)
    broken = container([entry(ELF, 90, 100)])[:-40]
    (site / "torch/lib/libtorch_cuda.so").write_bytes(elf({".nv_fatbin": broken}))
    assert bench_size.main(["--torch", str(site / "torch")]) == 1
    assert "libtorch_cuda.so" in capsys.readouterr().err


def test_cuobjdump_cross_check_where_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    site = _site(tmp_path)
    assert bench_size.main(["--torch", str(site / "torch"), "--cuobjdump"]) == 0
    assert "cuobjdump: not on PATH" in capsys.readouterr().out


def test_cuobjdump_cross_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cuobjdump that lists what NVIDIA's lists for these files: agreement; one that lists
    another cubin: the difference, exit 1."""
    site = _site(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "cuobjdump"
    listing = {
        "libtorch_cuda.so": "ELF file    1: libtorch_cuda.1.sm_80.cubin\\nELF file    2: libtorch_cuda.2.sm_90.cubin\\n",
        "libtorch_cuda_linalg.so": "ELF file    1: x.1.sm_80.cubin\\nELF file    2: x.2.sm_90a.cubin\\n",
    }
    cases = "".join(f'  *{name}) printf "{text}" ;;\n' for name, text in listing.items())
    tool.write_text(f'#!/bin/sh\ncase "$2" in\n{cases}esac\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert bench_size.main(["--torch", str(site / "torch"), "--cuobjdump"]) == 0
    assert capsys.readouterr().out.count("parser agrees") == 2
    listing["libtorch_cuda.so"] += "ELF file    3: libtorch_cuda.3.sm_100.cubin\\n"
    cases = "".join(f'  *{name}) printf "{text}" ;;\n' for name, text in listing.items())
    tool.write_text(f'#!/bin/sh\ncase "$2" in\n{cases}esac\n')
    assert bench_size.main(["--torch", str(site / "torch"), "--cuobjdump"]) == 1
    assert "DIFFERS" in capsys.readouterr().out
