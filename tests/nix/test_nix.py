"""The rendered recipes under Nix itself, against the nixpkgs double.

Every recipe of the shipped branches and of the upstream 2.10 test catalog is instantiated
(`nix-instantiate`, a real .drv) through its nixpkgs door with tests/nix/nixpkgs-double/fetch.nix,
so the pin, config, overlays and source overrides of each recipe are evaluated by the double's
model of nixpkgs' rules. Then, per variant, what the catalog promises is read back from the
derivation. A second group shows the double refusing each rule it models.

Runs `nix-instantiate` (Debian's nix-bin); skips with the reason where it is missing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ci_tools.catalog.load import load_catalog
from ci_tools.catalog.model import Catalog, Kind, Platform
from ci_tools.catalog.variants import Variant, expand
from ci_tools.render import recipes
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT
DOUBLE = REPO / "tests" / "nix" / "nixpkgs-double"
UPSTREAM = REPO / "tests" / "data" / "upstream" / "pytorch-2.10-python313.yaml"
MAX_JOBS_CAP = "$(( NIX_BUILD_CORES < 32 ? NIX_BUILD_CORES : 32 ))"

REV_MAIN = "fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3"
REV_2_9 = "6a030d535719c5190187c4cec156f335e95e3211"
REV_13_1 = "2017d6d515f8a7b289fe06d3a880a7ec588c3900"

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None,
    reason="nix-instantiate not found: install Debian's nix-bin to run the Nix tests",
)


@pytest.fixture(scope="module")
def nix_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """nix-instantiate with its state in a temporary directory: works unprivileged and offline.
    Builds run as the invoking user, never as Nix's build users (nixbld1, ...): each test's
    state directory has its own user-pool locks, so two builds at once (xdist's workers)
    would take the same build user, and Nix kills every process of a build user before it
    builds with it ("failed due to signal 9", "reading a line: Input/output error")."""
    state = tmp_path_factory.mktemp("nix-state")
    (state / "conf").mkdir()
    (state / "conf" / "nix.conf").write_text("build-users-group =\n", encoding="utf-8")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(state),
        "NIX_STATE_DIR": str(state / "state"),
        "NIX_LOG_DIR": str(state / "log"),
        "NIX_CONF_DIR": str(state / "conf"),
        "NIX_REMOTE": "",
        "XDG_CACHE_HOME": str(state / "cache"),
    }


def nix_eval(
    env: Mapping[str, str], expr: str, system: str = "x86_64-linux", cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "nix-instantiate",
            "--option",
            "system",
            system,
            "--eval",
            "--strict",
            "--json",
            "-E",
            expr,
        ],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def nix_json(
    env: Mapping[str, str], expr: str, system: str = "x86_64-linux", cwd: Path = REPO
) -> Any:
    result = nix_eval(env, expr, system, cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def nix_error(env: Mapping[str, str], expr: str, system: str = "x86_64-linux") -> str:
    result = nix_eval(env, expr, system)
    assert result.returncode != 0, f"the double accepted: {expr}\n{result.stdout[:500]}"
    return result.stderr


# ---------------------------------------------------------------------------------------------
# Every recipe, instantiated


def _repository(root: Path, catalog: Catalog, branch: str) -> Path:
    """A build repository for one branch: nix/, the double, and the rendered .flox/pkgs."""
    shutil.copytree(REPO / "nix", root / "nix")
    shutil.copytree(DOUBLE, root / "double")
    pkgs = root / ".flox" / "pkgs"
    pkgs.mkdir(parents=True)
    env = recipes.environment()
    for file in recipes.render_branch(catalog, branch, env):
        (pkgs / file.path).write_text(file.text, encoding="utf-8")
    return root


# One evaluation per (branch, platform): what each recipe's derivation says, as JSON.
_PROBE = r"""
names:
let
  door = import ./double/fetch.nix;
  str = x: if x == null then "" else toString x;
  info = n:
    let
      d = import (./.flox/pkgs + "/${n}.nix") { fetchPinnedNixpkgs = door; };
      t = d.passthru.torch or d;
    in {
      name = n;
      drvPath = d.drvPath;
      version = d.version;
      buildVersion = d.PYTORCH_BUILD_VERSION or null;
      phases = map (p: str (d.${p} or "")) [ "postPatch" "preConfigure" "preBuild" ];
      scrub = str (d.postInstall or "") + str (d.postFixup or "");
      disallowed = map toString (d.disallowedReferences or [ ]);
      inputs = map (x: x.name or "") (d.buildInputs or [ ]);
      torchDrv = if d.passthru ? torch then d.passthru.torch.drvPath else null;
      cuda = if t.passthru.cudaSupport or false then t.passthru.cudaPackages.cudaVersion else null;
      blasIsDrv = (d.passthru.blasProvider.type or "") == "derivation";
      mps = d.USE_MPS or null;
      platforms = d.meta.platforms;
    };
in map info names
"""


def _probe(env: Mapping[str, str], root: Path, variants: list[Variant]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_platform: dict[Platform, list[str]] = {}
    for variant in variants:
        by_platform.setdefault(variant.platform, []).append(variant.name)
    for platform, names in by_platform.items():
        arg = "[ " + " ".join(json.dumps(n) for n in names) + " ]"
        data = nix_json(env, f"({_PROBE}) {arg}", system=platform.value, cwd=root)
        out.update({item["name"]: item for item in data})
    return out


CATALOGS = {
    "main": (REPO / "catalog.yaml", "main"),
    "cuda-12_9": (REPO / "catalog.yaml", "cuda-12_9"),
    "cuda-13_0": (REPO / "catalog.yaml", "cuda-13_0"),
    "upstream-2.10": (UPSTREAM, "pytorch-2.10-python313"),
}


@pytest.fixture(scope="module", params=sorted(CATALOGS))
def evaluated(
    request: pytest.FixtureRequest,
    nix_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[Variant], dict[str, Any]]:
    path, branch = CATALOGS[request.param]
    catalog = load_catalog(path)
    root = _repository(tmp_path_factory.mktemp(request.param), catalog, branch)
    variants = list(expand(catalog, branch))
    return variants, _probe(nix_env, root, variants)


def _last_export(phases: list[str], name: str) -> str | None:
    """The value the last `export NAME=...` across the phases (in build order) sets."""
    value = None
    for phase in phases:
        for line in phase.splitlines():
            match = re.match(rf"\s*export {name}=(.*)$", line)
            if match:
                value = match.group(1).strip()
    return value


def _unquote(value: str | None) -> str | None:
    return None if value is None else " ".join(shlex.split(value))


def test_every_recipe_instantiates(evaluated: tuple[list[Variant], dict[str, Any]]) -> None:
    variants, data = evaluated
    assert set(data) == {v.name for v in variants}
    for variant in variants:
        assert data[variant.name]["drvPath"].endswith(".drv"), variant.name


def test_versions_are_the_catalogs(evaluated: tuple[list[Variant], dict[str, Any]]) -> None:
    variants, data = evaluated
    for variant in variants:
        got = data[variant.name]
        assert got["version"] == variant.version, variant.name
        if variant.package.requires is None:
            # PYTORCH_BUILD_VERSION is bound with `rec` in nixpkgs: it must follow a source override.
            assert got["buildVersion"] == variant.version, variant.name


def test_cuda_arch_list_is_exactly_the_variants_sm(
    evaluated: tuple[list[Variant], dict[str, Any]],
) -> None:
    variants, data = evaluated
    for variant in variants:
        got = data[variant.name]
        arch = _unquote(_last_export(got["phases"], "TORCH_CUDA_ARCH_LIST"))
        if variant.kind is Kind.GPU:
            assert variant.gpu is not None and variant.toolkit is not None
            assert arch == variant.gpu.capability, variant.name
            assert got["cuda"].startswith(variant.toolkit.cuda_short + "."), variant.name
            if variant.package.requires is not None:
                assert _last_export(got["phases"], "FORCE_CUDA") == "1", variant.name
        else:
            assert arch is None, variant.name
            assert got["cuda"] is None, variant.name


def test_cudnn_absent_exactly_where_the_catalog_says(
    evaluated: tuple[list[Variant], dict[str, Any]],
) -> None:
    variants, data = evaluated
    for variant in variants:
        if variant.kind is not Kind.GPU or variant.package.requires is not None:
            continue
        got = data[variant.name]
        linked = any(name.startswith("cudnn-") for name in got["inputs"])
        exported = _last_export(got["phases"], "CUDNN_INCLUDE_DIR") is not None
        assert linked == variant.cudnn == exported, variant.name
        assert (_last_export(got["phases"], "USE_CUDNN") == "0") == (not variant.cudnn)


def test_max_jobs_cap_is_what_the_last_phase_exports(
    evaluated: tuple[list[Variant], dict[str, Any]],
) -> None:
    variants, data = evaluated
    for variant in variants:
        phases = data[variant.name]["phases"]
        assert _last_export(phases, "MAX_JOBS") == MAX_JOBS_CAP, variant.name
        # ... and it is in preBuild, after nixpkgs' `export MAX_JOBS=$NIX_BUILD_CORES`.
        assert _last_export(phases[2:], "MAX_JOBS") == MAX_JOBS_CAP, variant.name


def test_inductor_compiler_and_addr2line_survive(
    evaluated: tuple[list[Variant], dict[str, Any]],
) -> None:
    variants, data = evaluated
    for variant in variants:
        if variant.package.requires is not None:
            continue
        got = data[variant.name]
        post_patch = got["phases"][0]
        compiler = re.search(r"'\"(/nix/store/[^/\"]+)/bin/c\+\+\"'", post_patch)
        addr2line = re.search(r"(/nix/store/[^/\"]+)/bin/addr2line", post_patch)
        assert compiler and addr2line, variant.name
        for kept in (compiler.group(1), addr2line.group(1)):
            assert kept not in got["disallowed"], variant.name
            # Only nixpkgs' own scrub may name it, and that one reaches torch/include and
            # torch/lib only, never torch/_inductor/config.py.
            for line in got["scrub"].splitlines():
                if f"-t {kept}" in line:
                    assert re.match(
                        r'find "\$out/[^"]+/torch/include" "\$out/[^"]+/torch/lib" ', line
                    ), (variant.name, line)


def test_darwin_uses_veclib_and_keeps_nixpkgs_blas_provider(
    evaluated: tuple[list[Variant], dict[str, Any]],
) -> None:
    variants, data = evaluated
    for variant in variants:
        got = data[variant.name]
        if variant.package.requires is not None:
            continue
        assert got["blasIsDrv"], variant.name
        if variant.kind is Kind.DARWIN:
            assert _last_export(got["phases"], "BLAS") == "vecLib", variant.name
            assert got["mps"] == "1", variant.name
            assert got["platforms"] == ["aarch64-darwin"]


def test_a_dependents_torch_is_its_siblings_derivation(
    evaluated: tuple[list[Variant], dict[str, Any]],
) -> None:
    variants, data = evaluated
    for variant in variants:
        if variant.requires is not None:
            assert data[variant.name]["torchDrv"] == data[variant.requires]["drvPath"], variant.name


def test_upstream_names_are_exactly_upstreams() -> None:
    names = {v.name + ".nix" for v in expand(load_catalog(UPSTREAM), "pytorch-2.10-python313")}
    listed = set(UPSTREAM.with_suffix(".names").read_text(encoding="utf-8").split())
    assert len(listed) == 237
    assert names == listed


def test_cuda_13_0_is_pytorch_2_10_on_cuda_13_0(nix_env: dict[str, str], tmp_path: Path) -> None:
    root = _repository(tmp_path, load_catalog(REPO / "catalog.yaml"), "cuda-13_0")
    name = "pytorch-python313-cuda13_0-sm90-avx512"
    got = nix_json(
        nix_env,
        f"""let d = import ./.flox/pkgs/{name}.nix {{
              fetchPinnedNixpkgs = import ./double/fetch.nix; }};
            in [ d.version d.PYTORCH_BUILD_VERSION d.passthru.cudaPackages.cudaVersion
                 d.src.url (builtins.length d.patches) ]""",
        cwd=root,
    )
    assert got[:3] == ["2.10.0", "2.10.0", "13.0.2"]
    assert got[3] == "https://github.com/pytorch/pytorch/archive/v2.10.0.tar.gz"
    assert got[4] == 0


# ---------------------------------------------------------------------------------------------
# The double refuses what nixpkgs refuses


def _pkgs(
    rev: str = REV_2_9,
    cuda: str | None = "cudaPackages_12_9",
    caps: str = '[ "9.0" ]',
    config: str = "",
    overlays: str = "",
) -> str:
    overlay = f"(final: prev: {{ cudaPackages = final.{cuda}; }})" if cuda else ""
    return f"""(import (import ./tests/nix/nixpkgs-double/fetch.nix {{ rev = "{rev}"; }}) {{
      config = {{ allowUnfree = true; cudaSupport = {"true" if cuda else "false"};
                  cudaCapabilities = {caps}; {config} }};
      overlays = [ {overlay} {overlays} ];
    }})"""


def _torch(pkgs: str, extra: str = "") -> str:
    return f'({pkgs}.python313Packages.torch.override {{ cudaSupport = true; gpuTargets = [ "9.0" ]; {extra} }})'


def test_double_accepts_the_plain_cuda_build(nix_env: dict[str, str]) -> None:
    assert nix_json(nix_env, f"{_torch(_pkgs())}.drvPath").endswith("-torch-2.9.1.drv")


def test_double_refuses_an_unknown_override_argument(nix_env: dict[str, str]) -> None:
    err = nix_error(nix_env, f"{_torch(_pkgs(), 'enableFlux = true;')}.drvPath")
    assert "called with unexpected argument 'enableFlux'" in err
    # torchvision follows torch: it has no cudaSupport of its own.
    err = nix_error(
        nix_env,
        f"({_pkgs()}.python313Packages.torchvision.override {{ cudaSupport = true; }}).drvPath",
    )
    assert "unexpected argument 'cudaSupport'" in err


def test_double_refuses_cuda_13_without_allow_broken(nix_env: dict[str, str]) -> None:
    err = nix_error(nix_env, f"{_torch(_pkgs(cuda='cudaPackages_13'))}.drvPath")
    assert "is marked as broken" in err and "Unsupported CUDA version" in err
    broken_ok = _pkgs(cuda="cudaPackages_13", config="allowBroken = true;")
    assert nix_json(nix_env, f"{_torch(broken_ok)}.drvPath").endswith(".drv")


def test_double_refuses_sm61_with_cudnn_9_12_or_newer(nix_env: dict[str, str]) -> None:
    pkgs = _pkgs(caps='[ "6.1" ]')
    err = nix_error(nix_env, f"{_torch(pkgs)}.drvPath")
    assert "cudnn-9.13.0" in err and "not available on the requested hostPlatform" in err
    # A cudaPackages without cudnn is what torch guards with `cudaPackages ? cudnn`.
    without = f'(builtins.removeAttrs {pkgs}.cudaPackages [ "cudnn" ])'
    fixed = _torch(pkgs, f"cudaPackages = {without};")
    assert nix_json(nix_env, f"{fixed}.drvPath").endswith(".drv")


def test_double_refuses_unfree_cuda_without_allow_unfree(nix_env: dict[str, str]) -> None:
    pkgs = _pkgs().replace("allowUnfree = true;", "allowUnfree = false;")
    assert "has an unfree license" in nix_error(nix_env, f"{_torch(pkgs)}.drvPath")


def test_double_refuses_an_unknown_revision_and_a_bad_sha256(nix_env: dict[str, str]) -> None:
    fetch = "import ./tests/nix/nixpkgs-double/fetch.nix"
    err = nix_error(nix_env, f'builtins.typeOf ({fetch} {{ rev = "{"0" * 40}"; }})')
    assert "unknown nixpkgs revision" in err
    err = nix_error(nix_env, f'builtins.typeOf ({fetch} {{ rev = "{REV_MAIN}"; sha256 = "abc"; }})')
    assert "is not a Nix sha256 hash" in err


def test_double_lacks_the_cuda_sets_a_pin_lacks(nix_env: dict[str, str]) -> None:
    assert "attribute 'cudaPackages_13_1' missing" in nix_error(
        nix_env, f"{_torch(_pkgs(cuda='cudaPackages_13_1'))}.drvPath"
    )
    assert "cudaPackages_13_0" in nix_error(
        nix_env, f"{_torch(_pkgs(rev=REV_MAIN, cuda='cudaPackages_13_0'))}.drvPath"
    )
    ok = _pkgs(rev=REV_13_1, cuda="cudaPackages_13_1", config="allowBroken = true;")
    assert nix_json(nix_env, f"{_torch(ok)}.passthru.cudaPackages.cudaVersion") == "13.1.1"


def test_double_fetchers_are_fixed_output_and_need_a_hash(nix_env: dict[str, str]) -> None:
    gh = f'{_pkgs()}.fetchFromGitHub {{ owner = "pytorch"; repo = "pytorch"; rev = "v2.10.0"; '
    assert "fetchurl requires a hash" in nix_error(nix_env, f"({gh} }}).drvPath")
    assert "invalid SRI hash" in nix_error(nix_env, f'({gh} hash = "sha256-abc="; }}).drvPath')
    good = f'({gh} hash = "sha256-RKiZLHBCneMtZKRgTEuW1K7+Jpi+tx11BMXuS1jC1xQ="; }}).drvPath'
    assert nix_json(nix_env, good).endswith("-source.drv")
    assert "fetchurl requires a hash" in nix_error(
        nix_env, f'({_pkgs()}.fetchpatch {{ url = "https://example.org/x.patch"; }}).drvPath'
    )


def test_double_overlays_form_a_fixpoint(nix_env: dict[str, str]) -> None:
    # The first overlay reads `final.later`, which only the second defines.
    pkgs = _pkgs(
        cuda=None,
        overlays="(final: prev: { early = final.later + 1; }) (final: prev: { later = 41; })",
    )
    assert nix_json(nix_env, f"{pkgs}.early") == 42
    # pythonPackagesExtensions reach every Python set.
    ext = _pkgs(
        cuda=None,
        overlays="(final: prev: { pythonPackagesExtensions = prev.pythonPackagesExtensions ++ "
        '[ (py: pyprev: { torch = pyprev.torch.overrideAttrs { version = "9.9"; }; }) ]; })',
    )
    assert nix_json(
        nix_env, f"[ {ext}.python313Packages.torch.version {ext}.python3Packages.torch.version ]"
    ) == [
        "9.9",
        "9.9",
    ]


def test_double_override_attrs_has_final_attrs_and_keeps_override(nix_env: dict[str, str]) -> None:
    torch = f"{_pkgs(cuda=None)}.python313Packages.torch"
    got = nix_json(
        nix_env,
        f"""let a = {torch}.overrideAttrs (finalAttrs: prev: {{ version = "3.0"; x = "v${{finalAttrs.version}}"; }});
                b = a.override {{ MPISupport = false; }};
            in [ a.x b.version b.PYTORCH_BUILD_VERSION ]""",
    )
    # `rec` in nixpkgs: PYTORCH_BUILD_VERSION keeps the pin's version.
    assert got == ["v3.0", "3.0", "2.9.1"]


def test_double_torchvision_on_sm110_gets_no_arch_without_the_export(
    nix_env: dict[str, str],
) -> None:
    # nixpkgs 2.9.1: torch's supported list lacks 11.0, so torchvision's list comes out empty.
    pkgs = _pkgs(cuda="cudaPackages_13", caps='[ "11.0" ]', config="allowBroken = true;")
    torch = f'({pkgs}.python313Packages.torch.override {{ cudaSupport = true; gpuTargets = [ "11.0" ]; }})'
    pre = nix_json(
        nix_env,
        f"({pkgs}.python313Packages.torchvision.override {{ torch = {torch}; }}).preConfigure",
    )
    assert 'export TORCH_CUDA_ARCH_LIST=""' in pre


def test_double_magma_fails_on_cuda_13_unless_patched(nix_env: dict[str, str]) -> None:
    cuda13 = _pkgs(cuda="cudaPackages_13", config="allowBroken = true;")
    fail = nix_json(nix_env, f"{cuda13}.magma-cuda-static.drvAttrs.doubleFail")
    assert "has no member named 'clockRate'" in fail
    patched = _pkgs(
        cuda="cudaPackages_13",
        config="allowBroken = true;",
        overlays="(import ./nix/overlays/magma-cuda13-clockrate.nix)",
    )
    assert nix_json(nix_env, f"{patched}.magma-cuda-static.drvAttrs.doubleFail") == ""
    # The 13.1 pin's MAGMA has the fix already.
    pin131 = _pkgs(rev=REV_13_1, cuda="cudaPackages_13_1", config="allowBroken = true;")
    assert nix_json(nix_env, f"{pin131}.magma-cuda-static.drvAttrs.doubleFail") == ""


def test_double_refuses_a_package_for_another_platform(nix_env: dict[str, str]) -> None:
    pkgs = _pkgs()
    err = nix_error(nix_env, f"{_torch(pkgs)}.drvPath", system="aarch64-darwin")
    assert "is marked as broken" in err and "CUDA is not targeting Linux" in err


def test_a_recipe_realises_in_a_private_store(nix_env: dict[str, str], tmp_path: Path) -> None:
    """The double's derivations build (each output a file written by /bin/sh) in milliseconds."""
    name = "torchvision-python313-cuda12_8-sm90-avx512"
    store = tmp_path / "store"
    result = subprocess.run(
        [
            "nix-build",
            "--store",
            str(store),
            "--option",
            "sandbox-paths",
            "/bin /lib /lib64 /usr",
            "--no-out-link",
            "--arg",
            "fetchPinnedNixpkgs",
            "import ./tests/nix/nixpkgs-double/fetch.nix",
            f".flox/pkgs/{name}.nix",
        ],
        env=nix_env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout.strip()
    assert out.endswith(f"-{name}-0.23.0")
    assert (store / out.lstrip("/")).read_text(encoding="utf-8").strip() == f"{name}-0.23.0"


def test_unpatched_magma_on_cuda_13_fails_to_build(nix_env: dict[str, str], tmp_path: Path) -> None:
    expr = f"{_pkgs(cuda='cudaPackages_13', config='allowBroken = true;')}.magma-cuda-static"
    result = subprocess.run(
        ["nix-build", "--store", str(tmp_path / "store"), "--option", "sandbox-paths",
         "/bin /lib /lib64 /usr", "--no-out-link", "-E", expr],
        env=nix_env, cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "has no member named 'clockRate'" in result.stderr


# ---------------------------------------------------------------------------------------------
# The prebuilt knob: an exact match realises to a host interpreter and package, nothing else


def _prebuilt(tmp_path: Path, *, torch: str = "2.9.1", python: str = "3.13") -> dict[str, str]:
    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("__version__ = 'host'\n", encoding="utf-8")
    description = {
        "python": {"minor": python, "version": f"{python}.1", "executable": "/usr/bin/python3"},
        "packages": {"torch": {"version": torch, "local": "", "paths": [str(site / "torch")]}},
    }
    path = tmp_path / "prebuilt.json"
    path.write_text(json.dumps(description), encoding="utf-8")
    return {"NIXPKGS_DOUBLE_PREBUILT": str(path)}


def test_double_prebuilt_stands_only_for_an_exact_version_and_python(
    nix_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**nix_env, **_prebuilt(tmp_path)}
    cpu = _pkgs(cuda=None)
    site = nix_json(env, f"{cpu}.python313Packages.torch.drvAttrs.doubleSiteDir")
    assert site == "lib/python3.13/site-packages"
    assert nix_json(env, f"{cpu}.python313Packages.python.name") == "python3-3.13.1"
    assert nix_json(env, f"{cpu}.python313Packages.python.drvAttrs.doubleInterpreter") == (
        "/usr/bin/python3"
    )
    # Another Python, another version at another pin: placeholders, as without the knob.
    assert nix_json(env, f"{cpu}.python312Packages.torch.drvAttrs.doubleSiteDir") == ""
    assert nix_json(env, f"{cpu}.python312Packages.python.drvAttrs.doubleInterpreter") == ""
    main = _pkgs(rev=REV_MAIN, cuda=None)
    assert nix_json(env, f"{main}.python313Packages.torch.drvAttrs.doubleSiteDir") == ""
    # The final version decides: a source override to the described version matches.
    overridden = f'({main}.python313Packages.torch.overrideAttrs (_: {{ version = "2.9.1"; }}))'
    assert nix_json(env, f"{overridden}.drvAttrs.doubleSiteDir") == site
    # Without the knob nothing is prebuilt.
    assert nix_json(nix_env, f"{cpu}.python313Packages.torch.drvAttrs.doubleSiteDir") == ""


def test_double_prebuilt_refuses_a_path_the_builder_would_split(
    nix_env: dict[str, str], tmp_path: Path
) -> None:
    knob = _prebuilt(tmp_path)
    path = Path(knob["NIXPKGS_DOUBLE_PREBUILT"])
    description = json.loads(path.read_text(encoding="utf-8"))
    description["packages"]["torch"]["paths"] = ["/opt/site packages/torch"]
    path.write_text(json.dumps(description), encoding="utf-8")
    err = nix_error({**nix_env, **knob}, f"{_pkgs(cuda=None)}.python313Packages.torch.drvPath")
    assert "is not a plain absolute path" in err


def test_double_prebuilt_closure_holds_the_interpreter(
    nix_env: dict[str, str], tmp_path: Path
) -> None:
    """Realised, the match is a site-packages of links whose closure holds the interpreter, as
    nixpkgs' propagated-build-inputs makes it: what `ci-tools test` looks for."""
    env = {**nix_env, **_prebuilt(tmp_path)}
    store = tmp_path / "store"
    built = subprocess.run(
        ["nix-build", "--store", str(store), "--option", "sandbox-paths", "/bin /lib /lib64 /usr",
         "--no-out-link", "-E", f"{_pkgs(cuda=None)}.python313Packages.torch"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    out = store / built.stdout.strip().lstrip("/")
    link = out / "lib/python3.13/site-packages/torch"
    assert link.is_symlink() and link.readlink() == tmp_path / "site-packages" / "torch"
    python = (out / "nix-support/propagated-build-inputs").read_text(encoding="utf-8").strip()
    assert python.endswith("-python3-3.13.1")
    wrapper = (store / python.lstrip("/") / "bin" / "python3").read_text(encoding="utf-8")
    assert wrapper.splitlines()[-1] == 'exec /usr/bin/python3 -S "$@"'
    closure = subprocess.run(
        ["nix-store", "--store", str(store), "--query", "--requisites", built.stdout.strip()],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert python in closure
