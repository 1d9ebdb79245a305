"""This machine's Python and CPU torch as a variant that builds under the doubles and passes
its smoke test for real, so the scenarios can follow what only a passing variant does
(`mark-green`, `flox publish`, the release's "published").

How, and what stands for what:
* tests/nix/nixpkgs-double/prebuilt.py describes this interpreter and its torch; with
  NIXPKGS_DOUBLE_PREBUILT naming that description, the nixpkgs double realises
  `python3XXPackages.torch` of exactly that version as the installed torch (a binary cache
  holding the build), and everything else as placeholders.
* The scenario's catalog makes main's PyTorch that version for that Python, through a source
  override (`sources.pytorch`), the catalog's way to build a release its pin does not ship.
  The override's fixed-output source is a stand-in tree already in the scenario's store, under
  its own hash, as if fetched: the double compiles nothing, so the tree is never read.
* `ci-tools test` then finds the interpreter in the build's closure and runs every check on
  the real torch. A variant for another Python, or of another version, stays a placeholder and
  fails its test, as before.
"""

from __future__ import annotations

import base64
import functools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ci_tools.host import hostcpu
from tests.act.harness import REPO_ROOT, Scenario

PREBUILT_SCRIPT = REPO_ROOT / "tests" / "nix" / "nixpkgs-double" / "prebuilt.py"
DOUBLE_PYTHONS = ("3.11", "3.12", "3.13")  # the Python sets the nixpkgs double models
MAIN_HEADER = (
    "  main:\n"
    '    versions: {pytorch: "2.8.0", torchvision: "0.23.0"}\n'
    '    cuda: "12.8"\n'
    '    python: ["3.13"]\n'
)
CPU_LIST = "        cpu: [avx2, avx512, avx512bf16, avx512vnni, armv8_2, armv9]\n"


@dataclass(frozen=True)
class HostTorch:
    description: Path  # what prebuilt.py wrote
    python: str  # "3.11"
    torch: str  # "2.13.0", without the local label

    @property
    def python_tag(self) -> str:
        return "python" + self.python.replace(".", "")

    def variant(self, isa: str) -> str:
        return f"pytorch-{self.python_tag}-cpu-{isa}"

    def stack(self, isa: str) -> str:
        return f"py{self.python.replace('.', '')}-cpu-{isa}"


@functools.cache
def _cuda_of_installed_torch() -> str | None:
    done = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.version.cuda or '')"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else "(torch does not import)"


def unavailable() -> str | None:
    """Why this machine cannot stand for a passing CPU variant, or None."""
    # The scenarios build and test x86_64 variants up to AVX2: the host must run them.
    if hostcpu.host_platform() != "x86_64-linux":
        return f"the scenarios' CPU variants are x86_64-linux, this is {hostcpu.host_platform()}"
    lacking = sorted({"avx", "avx2", "fma", "f16c"} - hostcpu.read_cpu_flags())
    if lacking:
        return f"this CPU lacks {', '.join(lacking)}, which the avx and avx2 variants need"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    if python not in DOUBLE_PYTHONS:
        return f"the nixpkgs double models Python {', '.join(DOUBLE_PYTHONS)}, not {python}"
    cuda = _cuda_of_installed_torch()
    if cuda:
        return (
            f"the torch installed here is not a CPU build (CUDA {cuda}); a CPU variant's "
            "test would rightly fail on it"
        )
    return None


def describe(into: Path) -> HostTorch:
    into.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(PREBUILT_SCRIPT), str(into)], check=True)
    data = json.loads(into.read_text(encoding="utf-8"))
    return HostTorch(
        description=into,
        python=data["python"]["minor"],
        torch=data["packages"]["torch"]["version"],
    )


def stand_in_source(folder: Path, version: str) -> tuple[Path, str]:
    """A source tree named `source` (fetchFromGitHub's default name) and its SRI hash."""
    tree = folder / "source"
    tree.mkdir(parents=True)
    (tree / "README").write_text(
        f"Stands for the pytorch v{version} source tree in the act scenarios; never built.\n",
        encoding="utf-8",
    )
    hexdigest = subprocess.run(
        ["nix-hash", "--type", "sha256", str(tree)], capture_output=True, text=True, check=True
    ).stdout.strip()
    return tree, "sha256-" + base64.b64encode(bytes.fromhex(hexdigest)).decode()


def make_main_host_torch(s: Scenario, host: HostTorch, cpu: list[str] | None = None) -> str:
    """Main's PyTorch becomes the host's version for the host's Python (recipes regenerated,
    committed and pushed); `cpu` replaces the CPU ISA lists of its PyTorch and TorchVision.
    Returns the commit."""
    tree, sri = stand_in_source(s.tmp / "pytorch-source", host.torch)
    s.add_to_store(tree)
    catalog = s.work / "catalog.yaml"
    text = catalog.read_text(encoding="utf-8")
    assert MAIN_HEADER in text and CPU_LIST in text, "catalog.yaml's main changed shape"
    text = text.replace(
        MAIN_HEADER,
        "  main:\n"
        f'    versions: {{pytorch: "{host.torch}", torchvision: "0.23.0"}}\n'
        '    cuda: "12.8"\n'
        f'    python: ["{host.python}"]\n'
        "    sources:\n"
        f'      pytorch: {{version: "{host.torch}", hash: "{sri}"}}\n',
    )
    if cpu is not None:
        # PyTorch's list and TorchVision's, which must not name an ISA PyTorch lacks.
        assert text.count(CPU_LIST) >= 2
        text = text.replace(CPU_LIST, f"        cpu: [{', '.join(cpu)}]\n", 2)
    catalog.write_text(text, encoding="utf-8")
    s.ci_tools("generate", "--branch", "main")
    return s.commit({}, f"catalog: PyTorch {host.torch} for Python {host.python}")
