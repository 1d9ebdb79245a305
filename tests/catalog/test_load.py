"""The catalog loader: the shipped catalog's variant sets, and every validation rule."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ci_tools.base.errors import SourceError
from ci_tools.catalog.load import load_catalog, parse_catalog_text
from ci_tools.catalog.model import Catalog, Kind
from ci_tools.catalog.variants import expand
from tests.conftest import REPO_ROOT, CliRunner

SHIPPED = (REPO_ROOT / "catalog.yaml").read_text(encoding="utf-8")


def _problems(text: str) -> list[str]:
    with pytest.raises(SourceError) as info:
        parse_catalog_text(text, "catalog.yaml")
    return [str(p) for p in info.value.problems]


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not in text")


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("branch", "pytorch_linux", "torchvision", "pytorch_total"),
    [("main", 44, 44, 45), ("cuda-12_9", 57, 57, 58), ("cuda-13_0", 59, 4, 60)],
)
def test_shipped_variant_counts(
    catalog: Catalog, branch: str, pytorch_linux: int, torchvision: int, pytorch_total: int
) -> None:
    counts = Counter((v.package.name, v.kind is Kind.DARWIN) for v in expand(catalog, branch))
    assert counts[("pytorch", False)] == pytorch_linux
    assert counts[("pytorch", False)] + counts[("pytorch", True)] == pytorch_total
    assert counts[("torchvision", False)] == torchvision
    assert counts[("torchvision", True)] == 0


def test_main_pytorch_set_is_the_issue_table(catalog: Catalog) -> None:
    names = {v.name for v in expand(catalog, "main") if v.package.name == "pytorch"}
    six = ["avx2", "avx512", "avx512bf16", "avx512vnni", "armv8_2", "armv9"]
    expected = {f"pytorch-python313-cpu-{isa}" for isa in six}
    expected |= {f"pytorch-python313-cuda12_8-sm61-{isa}" for isa in ("avx", "avx2")}
    for sm in ("sm80", "sm86", "sm89", "sm90", "sm100", "sm120"):
        expected |= {f"pytorch-python313-cuda12_8-{sm}-{isa}" for isa in six}
    expected.add("pytorch-python313-darwin-mps")
    assert names == expected


def test_cuda_12_9_adds_sm75_sm103_and_cpu_avx(catalog: Catalog) -> None:
    main = {v.suffix for v in expand(catalog, "main") if v.package.name == "pytorch"}
    c129 = {v.suffix for v in expand(catalog, "cuda-12_9") if v.package.name == "pytorch"}
    added = {s.replace("cuda12_9", "cuda12_8") for s in c129} - main
    assert {s.split("-")[2] for s in added if "-sm" in s} == {"sm75", "sm103"}
    assert "python313-cpu-avx" in added
    assert len(added) == 13


def test_cuda_13_0_torchvision_is_sm110_and_sm121_on_arm(catalog: Catalog) -> None:
    names = sorted(v.name for v in expand(catalog, "cuda-13_0") if v.package.name == "torchvision")
    assert names == [
        "torchvision-python313-cuda13_0-sm110-armv8_2",
        "torchvision-python313-cuda13_0-sm110-armv9",
        "torchvision-python313-cuda13_0-sm121-armv8_2",
        "torchvision-python313-cuda13_0-sm121-armv9",
    ]


def test_every_torchvision_variant_has_its_pytorch(catalog: Catalog) -> None:
    for branch in catalog.branches:
        variants = expand(catalog, branch)
        names = {v.name for v in variants}
        for variant in variants:
            if variant.requires is not None:
                assert variant.requires in names


def test_branch_facts(catalog: Catalog) -> None:
    c129 = catalog.branch("cuda-12_9")
    assert c129.cuda == "12.9.1"
    assert c129.cuda_tag == "12_9"
    assert c129.versions == {"pytorch": "2.9.1", "torchvision": "0.24.0"}
    assert c129.nixpkgs_rev == "6a030d535719c5190187c4cec156f335e95e3211"
    assert catalog.branch("main").min_driver == 570
    assert catalog.org == "barstoolbluz"
    assert catalog.gpus["sm121"].capability == "12.1"
    assert catalog.gpus["sm61"].cudnn is False


# --- validation: each rule names file:line --------------------------------------------


def test_sm_above_branch_cuda_is_rejected_with_its_line() -> None:
    text = _replace_once(
        SHIPPED,
        "          sm61: [avx, avx2]\n",
        "          sm61: [avx, avx2]\n          sm103: [avx2]\n",
    )
    line = _line_of(text, "sm103: [avx2]")
    assert _problems(text) == [
        f"catalog.yaml:{line}: sm103 needs CUDA >= 12.9, branch main has 12.8"
    ]


def test_sm61_on_cuda_13_is_rejected() -> None:
    text = _replace_once(
        SHIPPED,
        "            sm110: [armv8_2, armv9]\n            sm120",
        "            sm110: [armv8_2, armv9]\n            sm61: [avx2]\n            sm120",
    )
    line = _line_of(text, "sm61: [avx2]")
    assert _problems(text) == [
        f"catalog.yaml:{line}: sm61 needs CUDA <= 12.9, branch cuda-13_0 has 13.0"
    ]


def test_arm_only_sm_with_x86_isa_is_rejected() -> None:
    text = SHIPPED.replace(
        "      torchvision:\n        gpu:\n          cuda13_0:\n            sm110: [armv8_2, armv9]",
        "      torchvision:\n        gpu:\n          cuda13_0:\n            sm110: [armv8_2, avx2]",
    )
    problems = _problems(text)
    assert len(problems) == 1
    assert re.fullmatch(
        r"catalog\.yaml:\d+: sm110 pairs only with ISAs armv8_2, armv9; avx2 \(x86_64-linux\) "
        r"is not one of them \(branch cuda-13_0\)",
        problems[0],
    )


def test_unknown_isa_and_sm_suggest_the_closest() -> None:
    text = _replace_once(SHIPPED, "sm61: [avx, avx2]", "sm61: [avx, avx22]")
    text = _replace_once(text, "          sm86: *six_isas\n", "          sm68: *six_isas\n")
    problems = "\n".join(_problems(text))
    assert 'unknown ISA "avx22" on branch main (did you mean "avx2"?)' in problems
    assert 'unknown SM "sm68" on branch main' in problems


def test_torchvision_without_pytorch_sibling_is_rejected() -> None:
    text = SHIPPED.replace(
        "      torchvision:\n        gpu:\n          cuda13_0:\n            sm110:",
        "      torchvision:\n        cpu: [avx]\n        gpu:\n          cuda13_0:\n            sm110:",
    )
    text = text.replace(
        "        cpu: [avx, avx2, avx512, avx512bf16, avx512vnni, armv8_2, armv9]\n"
        "        gpu:\n          cuda13_0:\n",
        "        cpu: [avx2, avx512, avx512bf16, avx512vnni, armv8_2, armv9]\n"
        "        gpu:\n          cuda13_0:\n",
    )
    problems = _problems(text)
    assert len(problems) == 1
    assert (
        "torchvision-python313-cpu-avx on branch cuda-13_0 needs pytorch-python313-cpu-avx, "
        "which the branch does not build" in problems[0]
    )


def test_duplicate_names_are_rejected() -> None:
    text = _replace_once(SHIPPED, "cpu: [avx2, avx512,", "cpu: [avx2, avx2, avx512,")
    problems = _problems(text)
    assert any("duplicate variant pytorch-python313-cpu-avx2 on branch main" in p for p in problems)


def test_unknown_key_suggests_the_right_one() -> None:
    text = _replace_once(SHIPPED, "        min_driver: 580", "        min_drivr: 580")
    line = _line_of(text, "min_drivr")
    problems = _problems(text)
    assert any(
        p.startswith(
            f'catalog.yaml:{line}: unknown key "min_drivr" in toolkit cuda-13_0.toolkits.cuda13_0 '
            '(did you mean "min_driver"?)'
        )
        for p in problems
    )


def test_malformed_yaml_names_the_line() -> None:
    text = _replace_once(SHIPPED, '    cuda: "13.0"', '    cuda: ["13.0"')
    problems = _problems(text)
    assert len(problems) == 1
    assert re.fullmatch(r"catalog\.yaml:\d+: malformed YAML: .+", problems[0])


def test_unquoted_version_is_rejected_because_yaml_reads_it_as_a_number() -> None:
    text = _replace_once(SHIPPED, '    cuda: "12.8"', "    cuda: 12.8")
    problems = _problems(text)
    assert any("main.cuda must be a quoted string" in p for p in problems)


def test_cuda_packages_must_match_the_branch_cuda() -> None:
    text = _replace_once(
        SHIPPED, "cuda_packages: cudaPackages_12_8", "cuda_packages: cudaPackages_12_9"
    )
    problems = _problems(text)
    assert problems == [
        f"catalog.yaml:{_line_of(text, 'cudaPackages_12_9')}: main.cuda_packages is "
        "cudaPackages_12_9 but the branch's CUDA 12.8 is cudaPackages_12_8"
    ]


def test_bad_nixpkgs_rev_is_rejected() -> None:
    text = _replace_once(SHIPPED, "rev: fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3", "rev: fe5e41d")
    assert any("must be a full 40-hex-digit commit" in p for p in _problems(text))


def test_all_problems_of_a_stage_are_reported_together() -> None:
    text = _replace_once(SHIPPED, "    level: 1\n", "    levle: 1\n")
    text = _replace_once(text, "        min_driver: 580", "        min_drivr: 580")
    problems = _problems(text)
    assert len(problems) == 2
    assert 'unknown key "levle" in ISA avx (did you mean "level"?)' in problems[0]
    assert 'unknown key "min_drivr"' in problems[1]


def test_variant_rules_are_checked_once_the_tables_are_sound() -> None:
    text = _replace_once(SHIPPED, "sm61: [avx, avx2]", "sm61: [avx, avx22]")
    text = _replace_once(text, "sm80: &six_isas [avx2,", "sm80: &six_isas [avx3,")
    problems = _problems(text)
    assert any('unknown ISA "avx22"' in p for p in problems)
    assert any('unknown ISA "avx3"' in p for p in problems)


def test_empty_catalog() -> None:
    assert _problems("") == [
        "catalog.yaml:1: the catalog is empty; it needs packages, isas, gpus, branches"
    ]


def test_more_pythons_and_branches_need_no_code(tmp_path: Path) -> None:
    text = _replace_once(SHIPPED, 'python: ["3.13"]', 'python: ["3.12", "3.13"]')
    text += (
        "  cuda-12_6:\n"
        '    versions: {pytorch: "2.7.1"}\n'
        '    cuda: "12.6"\n'
        '    python: ["3.11"]\n'
        "    min_driver: 535\n"
        "    nixpkgs: {rev: fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3}\n"
        "    cuda_packages: cudaPackages_12_6\n"
        "    variants:\n"
        "      pytorch:\n"
        "        gpu: {sm90: [avx2]}\n"
    )
    path = tmp_path / "catalog.yaml"
    path.write_text(text, encoding="utf-8")
    catalog = load_catalog(path)
    assert len(expand(catalog, "main")) == 2 * 89
    assert [v.name for v in expand(catalog, "cuda-12_6")] == [
        "pytorch-python311-cuda12_6-sm90-avx2"
    ]


# --- toolkits, sources and overlays ----------------------------------------------------

UPSTREAM = REPO_ROOT / "tests" / "data" / "upstream" / "pytorch-2.10-python313.yaml"
UPSTREAM_TEXT = UPSTREAM.read_text(encoding="utf-8")


def _repo_with(tmp_path: Path, text: str) -> Path:
    """A build repository holding `text` as its catalog and the shipped nix/overlays/."""
    (tmp_path / "nix").mkdir()
    shutil.copytree(REPO_ROOT / "nix" / "overlays", tmp_path / "nix" / "overlays")
    path = tmp_path / "catalog.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _load_problems(path: Path) -> list[str]:
    with pytest.raises(SourceError) as info:
        load_catalog(path, "catalog.yaml")
    return [str(p) for p in info.value.problems]


def test_cuda_13_0_branch_declares_its_fixes(catalog: Catalog) -> None:
    branch = catalog.branch("cuda-13_0")
    (toolkit,) = branch.toolkits
    assert (toolkit.name, toolkit.cuda, toolkit.cuda_packages) == (
        "cuda13_0",
        "13.0",
        "cudaPackages_13_0",
    )
    assert toolkit.allow_broken
    assert toolkit.overlays == (
        "magma-cuda13-clockrate",
        "torch-cccl-include-shim",
        "torch-findcudatoolkit-stub",
    )
    (source,) = branch.sources
    assert (source.package, source.version) == ("pytorch", "2.10.0")
    # The one-toolkit branches keep their attributes.
    main = catalog.branch("main")
    assert (main.cuda, main.cuda_packages, main.toolkits[0].name) == (
        "12.8",
        "cudaPackages_12_8",
        "cuda12_8",
    )
    assert not main.toolkits[0].allow_broken and main.sources == ()


def test_upstream_catalog_has_four_toolkits_on_three_pins() -> None:
    catalog = load_catalog(UPSTREAM)
    branch = catalog.branch("pytorch-2.10-python313")
    assert [(t.name, t.cuda_packages, t.nixpkgs_rev[:7]) for t in branch.toolkits] == [
        ("cuda12_8", "cudaPackages_12_8", "0182a36"),
        ("cuda12_9", "cudaPackages_12_9", "0182a36"),
        ("cuda13_0", "cudaPackages_13", "6a030d5"),
        ("cuda13_1", "cudaPackages_13_1", "2017d6d"),
    ]
    variants = expand(catalog, "pytorch-2.10-python313")
    by_toolkit = Counter(v.toolkit.name if v.toolkit else v.kind.value for v in variants)
    assert by_toolkit == {
        "cuda12_8": 51,
        "cuda12_9": 58,
        "cuda13_0": 60,
        "cuda13_1": 60,
        "cpu": 7,
        "darwin": 1,
    }


def test_unknown_overlay_is_rejected_with_its_line(tmp_path: Path) -> None:
    text = _replace_once(
        SHIPPED, "overlays: [magma-cuda13-clockrate,", "overlays: [magma-cuda13-clockrat,"
    )
    problems = _load_problems(_repo_with(tmp_path, text))
    line = _line_of(text, "magma-cuda13-clockrat,")
    assert len(problems) == 1
    assert problems[0].startswith(
        f'catalog.yaml:{line}: unknown overlay "magma-cuda13-clockrat": no nix/overlays/'
        'magma-cuda13-clockrat.nix (did you mean "magma-cuda13-clockrate"?)'
    )


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="nix-instantiate not found")
def test_overlay_that_does_not_parse_is_rejected_at_the_catalog_line(tmp_path: Path) -> None:
    path = _repo_with(tmp_path, SHIPPED)
    (tmp_path / "nix" / "overlays" / "torch-cccl-include-shim.nix").write_text(
        "final: prev: { torch = ; }\n", encoding="utf-8"
    )
    problems = _load_problems(path)
    line = _line_of(SHIPPED, "overlays: [magma-cuda13-clockrate,")
    assert len(problems) == 1
    assert problems[0].startswith(
        f"catalog.yaml:{line}: overlay torch-cccl-include-shim "
        "(nix/overlays/torch-cccl-include-shim.nix) does not parse: "
    )
    assert "syntax error" in problems[0]


def test_shipped_overlays_parse(tmp_path: Path) -> None:
    load_catalog(_repo_with(tmp_path, SHIPPED))


def test_source_override_without_hash_is_rejected() -> None:
    text = _replace_once(
        SHIPPED,
        'pytorch: {version: "2.10.0", hash: "sha256-RKiZLHBCneMtZKRgTEuW1K7+Jpi+tx11BMXuS1jC1xQ="}',
        'pytorch: {version: "2.10.0"}',
    )
    line = _line_of(text, 'pytorch: {version: "2.10.0"}')
    problems = _problems(text)
    assert len(problems) == 1
    assert problems[0].startswith(f"catalog.yaml:{line}: ") and '"hash"' in problems[0]


def test_source_override_with_a_malformed_hash_or_other_version_is_rejected() -> None:
    text = _replace_once(SHIPPED, 'hash: "sha256-RKiZ', 'hash: "sha256-RK')
    line = _line_of(text, 'hash: "sha256-RK')
    # The message quotes the hash it refuses, then says what would be right.
    assert any(
        re.fullmatch(
            rf'catalog\.yaml:{line}: cuda-13_0\.sources\.pytorch\.hash "sha256-RK[^"]*" '
            r"must be the source's SRI hash \(sha256-\.\.\.=, 44 characters after the dash\), "
            "as nix-prefetch-github prints it",
            p,
        )
        for p in _problems(text)
    )
    text = _replace_once(
        SHIPPED, 'pytorch: {version: "2.10.0", hash', 'pytorch: {version: "2.10.1", hash'
    )
    assert any(
        "cuda-13_0.sources.pytorch.version 2.10.1 differs from cuda-13_0.versions.pytorch 2.10.0"
        in p
        for p in _problems(text)
    )


def test_two_toolkits_with_the_same_cuda_are_rejected() -> None:
    text = _replace_once(
        UPSTREAM_TEXT,
        '      cuda12_9:\n        cuda: "12.9"',
        '      cuda12_9:\n        cuda: "12.8.1"',
    )
    problems = _problems(text)
    assert any("its CUDA 12.8.1 is cuda12_8, not cuda12_9" in p for p in problems)
    twin = _replace_once(
        UPSTREAM_TEXT,
        '      cuda12_9:\n        cuda: "12.9"',
        '      cuda12_8b:\n        cuda: "12.8"',
    )
    assert any('"cuda12_8b" is not a toolkit name' in p for p in _problems(twin))
    # The name pattern cannot tell cuda12_8 twice apart in YAML; the rule on CUDA versions
    # catches a toolkit named for one CUDA and stating another's.
    same = _replace_once(
        UPSTREAM_TEXT,
        '      cuda13_1:\n        cuda: "13.1"',
        '      cuda13_1:\n        cuda: "13.0"',
    )
    assert any("cuda13_1: its CUDA 13.0 is cuda13_0" in p for p in _problems(same))


def test_sm_a_toolkit_cannot_compile_is_rejected_with_its_line() -> None:
    text = _replace_once(
        UPSTREAM_TEXT,
        "          cuda12_8:\n            sm61: [avx, avx2]\n",
        "          cuda12_8:\n            sm61: [avx, avx2]\n            sm103: [avx2]\n",
    )
    line = _line_of(text, "sm103: [avx2]")
    assert _problems(text) == [
        f"catalog.yaml:{line}: sm103 needs CUDA >= 12.9, branch pytorch-2.10-python313 "
        "toolkit cuda12_8 has 12.8"
    ]


def test_unknown_toolkit_in_variants_is_rejected() -> None:
    text = _replace_once(
        UPSTREAM_TEXT, "          cuda13_1: *cuda13", "          cuda13_2: *cuda13"
    )
    problems = _problems(text)
    assert any('unknown toolkit "cuda13_2" on branch pytorch-2.10-python313' in p for p in problems)


def test_bad_catalog_is_exit_2_and_writes_nothing(run_cli: CliRunner, tmp_path: Path) -> None:
    text = _replace_once(SHIPPED, "overlays: [magma-cuda13-clockrate,", "overlays: [nope,")
    _repo_with(tmp_path, text)
    result = run_cli("generate", "--branch", "cuda-13_0", cwd=tmp_path)
    assert result.returncode == 2
    assert "catalog.yaml:" in result.stderr and 'unknown overlay "nope"' in result.stderr
    assert not (tmp_path / ".flox").exists()


# --- issue 20 item 11: what the catalog accepts evaluates ------------------------------------


def test_the_bare_cuda_packages_set_is_refused() -> None:
    """`cuda_packages: cudaPackages` made nix/nixpkgs.nix's overlay recurse for ever."""
    text = _replace_once(SHIPPED, "cuda_packages: cudaPackages_12_8", "cuda_packages: cudaPackages")
    line = _line_of(text, "cuda_packages: cudaPackages\n".rstrip())
    (problem,) = [p for p in _problems(text) if "cuda_packages" in p]
    assert problem.startswith(f"catalog.yaml:{line}: main.cuda_packages")
    assert "versioned nixpkgs attribute like cudaPackages_12_9" in problem
    assert "recurse" in problem


@pytest.mark.parametrize("python", ["3.9", "3.10", "3.14", "3.1"])
def test_a_python_the_pins_lack_is_refused_naming_those_they_have(python: str) -> None:
    text = _replace_once(SHIPPED, 'python: ["3.13"]', f'python: ["{python}"]')
    problems = _problems(text)
    assert any(
        f'main.python: "{python}" is not a Python the nixpkgs pins have (3.11, 3.12, 3.13)' in p
        for p in problems
    ), problems


def test_unquoted_python_3_10_is_named_as_written_never_as_3_1() -> None:
    """Issue 20 item 10: the error suggested "3.1" as the fix for 3.10."""
    problems = _problems(_replace_once(SHIPPED, 'python: ["3.13"]', "python: [3.10]"))
    assert any('such as "3.10"' in p for p in problems), problems
    assert not any('"3.1"' in p for p in problems), problems


def test_a_package_other_than_torch_needs_requires() -> None:
    text = _replace_once(
        SHIPPED,
        "    import_name: torchvision\n    requires: pytorch\n",
        "    import_name: torchvision\n",
    )
    line = _line_of(text, "  torchvision:")
    assert any(
        p.startswith(
            f"catalog.yaml:{line}: package torchvision (attribute torchvision) has no "
            "`requires`: only torch builds on its own"
        )
        for p in _problems(text)
    )


def test_torch_with_requires_is_refused() -> None:
    text = _replace_once(
        SHIPPED,
        "  torchaudio:\n    attribute: torchaudio\n",
        "  torchaudio:\n    attribute: torch\n",
    )
    assert any("package torchaudio is torch and `requires` pytorch" in p for p in _problems(text))
