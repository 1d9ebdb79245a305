"""The size promise, projected from what a torch installation stores for each GPU.

    python3 benchmarks/bench_size.py [--torch DIR] [--json PATH] [--cuobjdump]

Reads, without importing torch, every ELF file of a torch installation (DIR, default the torch
this interpreter would import) and the bytes its fat binaries store per SM (benchmarks/fatbin.py).
For each SM that libtorch_cuda*.so carries code for, it prints what a build for that SM alone
would weigh at three levels, and the ratio to the installation as it is:

* libtorch_cuda*.so;
* the torch package (site-packages/torch);
* the whole install: torch's distribution and every distribution it requires, found through
  their metadata (NVIDIA's cuBLAS, cuDNN ... wheels, triton).

A PROJECTION, not a measured build: a one-SM build keeps its own SM's entries (SASS and PTX,
sm_90a with sm_90) and drops the others' stored bytes; nothing else changes. NVIDIA's own
libraries carry code for every GPU and a targeted torch does not touch them, so the whole
install shrinks by torch's saving alone. A real targeted build's result record
(`ci-tools test`, `benchmarks/bench_compare.py`) is the measurement.

`--cuobjdump` checks the parser against `cuobjdump --list-elf` (cubins per SM) where cuobjdump
is on PATH. Exit 0; 1 when a fat binary cannot be read or cuobjdump disagrees; 2 for bad input.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import importlib.util
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: the repository root holds benchmarks/ and ci_tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import fatbin
from ci_tools.base import proc
from ci_tools.build.report import format_bytes

LEVELS = {
    "cuda_libraries": "libtorch_cuda*.so",
    "torch_package": "torch package",
    "install": "whole install",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class BadInput(Exception):
    pass


@dataclass(frozen=True)
class Install:
    torch_dir: Path
    version: str | None
    torch_files: tuple[Path, ...]  # site-packages/torch
    other_files: tuple[Path, ...]  # the rest of torch's distribution and what it requires
    requires: tuple[str, ...]  # the distributions counted beside torch's own


@dataclass(frozen=True)
class Scan:
    size: int
    by_arch: Counter[int]  # fat binary bytes stored per SM over these files

    def other_than(self, arch: int) -> int:
        return sum(size for a, size in self.by_arch.items() if a != arch)


def locate_torch() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise BadInput("no torch on this interpreter's path; pass --torch DIR")
    return Path(spec.origin).parent


def find_install(torch_dir: Path) -> Install:
    if not (torch_dir / "__init__.py").is_file():
        raise BadInput(f"{torch_dir}: not a torch package (no __init__.py)")
    torch_files = tuple(regular_files(torch_dir.rglob("*")))
    dists = {
        _key(d.metadata["Name"] or ""): d
        for d in metadata.distributions(path=[str(torch_dir.parent)])
    }
    torch_dist = dists.get("torch")
    if torch_dist is None:
        return Install(torch_dir, None, torch_files, (), ())
    names = requirement_closure(dists, "torch")
    inside = set(torch_files)
    other: dict[Path, None] = {}
    for name in names:
        for file in dists[name].files or ():
            path = Path(str(dists[name].locate_file(file))).resolve()
            if path not in inside:
                other[path] = None
    return Install(
        torch_dir=torch_dir,
        version=torch_dist.version,
        torch_files=torch_files,
        other_files=tuple(regular_files(other)),
        requires=tuple(sorted(n for n in names if n != "torch")),
    )


def requirement_closure(dists: dict[str, metadata.Distribution], root: str) -> list[str]:
    """`root` and every installed distribution it requires, transitively: only requirements
    whose environment marker holds here (extras are not installed by `pip install torch`)."""
    seen, todo = [root], [root]
    while todo:
        for line in dists[todo.pop()].requires or ():
            name = _required(line)
            if name is not None and name in dists and name not in seen:
                seen.append(name)
                todo.append(name)
    return seen


def _required(line: str) -> str | None:
    """The distribution a Requires-Dist line names, or None where its marker does not hold."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # no packaging here: leave out what names an extra, keep the rest
        match = _NAME.match(line)
        return _key(match.group(0)) if match and "extra" not in line else None
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return None
    if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
        return None
    return _key(requirement.name)


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def regular_files(paths: Iterable[Path]) -> Iterable[Path]:
    for path in paths:
        if path.is_file() and not path.is_symlink():
            yield path.resolve()


def scan(files: Iterable[Path]) -> Scan:
    size, by_arch = 0, Counter[int]()
    for path in files:
        size += path.stat().st_size
        if _maybe_elf(path):
            try:
                by_arch.update(fatbin.stored_bytes(path))
            except fatbin.FatbinError as exc:
                raise fatbin.FatbinError(f"{path}: {exc}") from None
    return Scan(size=size, by_arch=by_arch)


def _maybe_elf(path: Path) -> bool:
    return ".so" in path.name or path.suffix in ("", ".bin")


def cuda_libraries(install: Install) -> list[Path]:
    lib = (install.torch_dir / "lib").resolve()
    return sorted(p for p in install.torch_files if p.parent == lib and _is_cuda_lib(p.name))


def _is_cuda_lib(name: str) -> bool:
    return name.startswith("libtorch_cuda") and ".so" in name


def project(cuda: Scan, torch: Scan, other: Scan) -> dict[str, Any]:
    """The installation's three sizes, and each SM's projection of them."""
    now = {
        "cuda_libraries": cuda.size,
        "torch_package": torch.size,
        "install": torch.size + other.size,
    }
    sms = {}
    for arch in sorted(cuda.by_arch):
        saved = torch.other_than(arch)
        sms[f"sm{arch}"] = {
            "cuda_libraries": cuda.size - cuda.other_than(arch),
            "torch_package": torch.size - saved,
            "install": torch.size + other.size - saved,
        }
    return {
        "now": now,
        "sms": sms,
        "fatbin": {
            "torch": {f"sm{a}": b for a, b in sorted(torch.by_arch.items())},
            "other": {f"sm{a}": b for a, b in sorted(other.by_arch.items())},
        },
    }


def render(install: Install, figures: dict[str, Any]) -> str:
    lines = [
        f"torch {install.version or '(no metadata)'} at {install.torch_dir}",
        "whole install: torch and "
        + (", ".join(install.requires) if install.requires else "nothing else found"),
    ]
    now = figures["now"]
    if not figures["sms"]:
        lines.append(
            "no GPU code in libtorch_cuda*.so (a CPU build, or no CUDA libraries): nothing to "
            f"project; torch package {format_bytes(now['torch_package'])}, whole install "
            f"{format_bytes(now['install'])}"
        )
        return "\n".join(lines) + "\n"
    lines.append("PROJECTION: one SM kept, the other SMs' stored fat binary bytes dropped")
    header = f"{'':<16}" + "".join(f"{label:<28}" for label in LEVELS.values())
    lines += [
        header,
        f"{'as installed':<16}" + "".join(f"{format_bytes(now[k]):<28}" for k in LEVELS),
    ]
    for sm, sizes in figures["sms"].items():
        cells = [f"{format_bytes(sizes[k])} {sizes[k] / now[k] - 1:+.1%}" for k in LEVELS]
        lines.append(f"{sm + ' alone':<16}" + "".join(f"{c:<28}" for c in cells))
    other = sum(figures["fatbin"]["other"].values())
    if other:
        lines.append(
            f"the other libraries of the install store {format_bytes(other)} of GPU code for "
            "every SM; a targeted torch leaves them as they are"
        )
    return "\n".join(line.rstrip() for line in lines) + "\n"


def check_with_cuobjdump(libraries: Sequence[Path]) -> list[str]:
    """Cubins per SM as the parser counts them against `cuobjdump --list-elf`: one line each
    library, 'agrees' or what differs."""
    if proc.which("cuobjdump") is None:
        return ["cuobjdump: not on PATH, no cross-check"]
    out = []
    for lib in libraries:
        result = proc.run(["cuobjdump", "--list-elf", str(lib)], timeout=600)
        listed = Counter(int(m) for m in re.findall(r"\.sm_(\d+)[a-z]?\.cubin", result.stdout))
        parsed = fatbin.elf_count_by_arch(lib.read_bytes())
        verdict = "agrees" if listed == parsed else f"DIFFERS: cuobjdump {dict(listed)}"
        out.append(f"cuobjdump {lib.name}: {sum(parsed.values())} cubins, parser {verdict}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--torch", type=Path, help="site-packages/torch (default: import's)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--cuobjdump", action="store_true", help="cross-check with cuobjdump")
    args = parser.parse_args(argv)
    try:
        install = find_install(args.torch or locate_torch())
        cuda = cuda_libraries(install)
        figures = project(scan(cuda), scan(install.torch_files), scan(install.other_files))
    except BadInput as exc:
        print(f"bench_size: {exc}", file=sys.stderr)
        return 2
    except fatbin.FatbinError as exc:
        print(f"bench_size: cannot read a fat binary: {exc}", file=sys.stderr)
        return 1
    print(render(install, figures), end="")
    status = 0
    if args.cuobjdump:
        for line in check_with_cuobjdump(cuda):
            print(line)
            status = 1 if "DIFFERS" in line else status
    if args.json:
        data = {"torch": install.version, "requires": list(install.requires), **figures}
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
