"""Variants of a build repository that has recipes but no catalog, from its recipe files.

Strict: every file under `.flox/pkgs/` is a variant of the grammar (DESIGN §2.4) or a
reported problem, unless it is ignored by name. flox's NEF names packages by path
(`dirToAttrs`): `<name>.nix` and `<name>/default.nix` are package `<name>` (the folder's
other files are that package's), any other folder is a package *set* (`lib/x.nix` is
package `lib.x`, which `flox build` builds), so a folder without `default.nix` is a
problem too: shared Nix belongs in `nix/` at the repository root.

The name alone gives a variant's package, Python, kind, SM and ISA; an unknown ISA or
package is an error, not a guess (an unknown ISA used to be placed on x86_64-linux).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ci_tools.catalog import names
from ci_tools.catalog.yamlsrc import did_you_mean
from ci_tools.plan.matrix import Target

_OLD_PYTHON = re.compile(r"-python3[0-7]-")

# The package every other package of a stack builds against.
BASE_PACKAGE = "pytorch"
# The packages a build repository without a catalog may hold (barstoolbluz/build-pytorch
# has these three); any other prefix is a misspelling or needs a catalog.
KNOWN_PACKAGES = ("pytorch", "torchaudio", "torchvision")

# /proc/cpuinfo flags per ISA (DESIGN §2.3); the shipped catalog's `isas` hold the same, a
# test keeps them equal. These are also the ISAs a name may carry.
DEFAULT_CPUINFO: Mapping[str, tuple[str, ...]] = {
    "avx": ("avx",),
    "avx2": ("avx2", "fma", "f16c"),
    "avx512": ("avx512f", "avx512dq", "avx512vl", "avx512bw"),
    "avx512bf16": ("avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_bf16"),
    "avx512vnni": ("avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_vnni"),
    "armv8_2": ("fphp", "asimdhp", "asimddp"),
    "armv9": ("sve", "sve2"),
}


@dataclass(frozen=True, kw_only=True)
class Discovered:
    targets: tuple[Target, ...]
    problems: tuple[str, ...]  # "<file>: <what is wrong and what would be right>"
    ignored: tuple[str, ...]  # files left out by name


def discover(files: Iterable[str], *, ignore: Iterable[str] = (), pkgs_dir: str) -> Discovered:
    """`files`: every file under `pkgs_dir`, as paths relative to it."""
    ignored_names = set(ignore)
    top_files: list[str] = []
    folders: dict[str, list[str]] = {}
    for rel in sorted(files):
        head, sep, rest = rel.partition("/")
        if sep:
            folders.setdefault(head, []).append(rest)
        else:
            top_files.append(rel)
    problems: list[str] = []
    ignored: list[str] = []
    candidates: list[tuple[str, str]] = []  # (package name, the file that declares it)
    for file in top_files:
        stem = file.removesuffix(".nix")
        if stem in ignored_names or file in ignored_names:
            ignored.append(f"{pkgs_dir}/{file}")
        elif not file.endswith(".nix"):
            problems.append(
                f"{pkgs_dir}/{file}: not a recipe (only <name>.nix and <name>/default.nix are "
                f"packages): move it out of {pkgs_dir}/, or pass --ignore {file}"
            )
        else:
            candidates.append((stem, f"{pkgs_dir}/{file}"))
    for folder, inner in sorted(folders.items()):
        if folder in ignored_names:
            ignored.extend(f"{pkgs_dir}/{folder}/{f}" for f in inner)
        elif "default.nix" in inner:
            candidates.append((folder, f"{pkgs_dir}/{folder}/default.nix"))
        else:
            problems.append(
                f"{pkgs_dir}/{folder}/: flox makes a folder without default.nix a package set "
                f"(its {inner[0]} is package {folder}.{inner[0].removesuffix('.nix')}): move "
                f"shared Nix to nix/ at the repository root, add {folder}/default.nix if it is "
                f"one package, or pass --ignore {folder}"
            )
    parsed: list[names.ParsedName] = []
    for name, file in candidates:
        found, problem = _check(name)
        if found is not None:
            parsed.append(found)
        else:
            problems.append(f"{file}: {problem}; or pass --ignore {name}")
    present = {p.name for p in parsed}
    return Discovered(
        targets=tuple(_target(p, present) for p in parsed),
        problems=tuple(problems),
        ignored=tuple(ignored),
    )


def _check(name: str) -> tuple[names.ParsedName | None, str]:
    parsed = names.parse_name(name)
    if parsed is None:
        fixed = names.respell(name)
        if fixed is not None:
            return None, f'"{name}" is not a variant name: did you mean "{fixed}"?'
        if _OLD_PYTHON.search(name):
            return None, (
                f'"{name}" is not a variant name: python<3 and the minor version> is '
                "python39, python311, python313 ... (python31 would be Python 3.1)"
            )
        head, extra = _grammar_prefix(name)
        if head is not None:
            return None, (
                f'"{name}" is not a variant name: "{extra}" after "{head}" is outside the '
                "grammar (another build of one variant needs its own name in the grammar)"
            )
        return None, f'"{name}" is not a variant name ({names.GRAMMAR})'
    if parsed.package not in KNOWN_PACKAGES:
        return None, (
            f'unknown package "{parsed.package}"{did_you_mean(parsed.package, KNOWN_PACKAGES)}; '
            f"known: {', '.join(KNOWN_PACKAGES)}"
        )
    if parsed.isa is not None and parsed.isa not in DEFAULT_CPUINFO:
        return None, (
            f'unknown ISA "{parsed.isa}"{did_you_mean(parsed.isa, tuple(DEFAULT_CPUINFO))}; '
            f"known: {', '.join(DEFAULT_CPUINFO)}"
        )
    return parsed, ""


def _grammar_prefix(name: str) -> tuple[str | None, str]:
    """The longest leading part of `name`, cut at a "-", that is a variant name."""
    parts = name.split("-")
    for cut in range(len(parts) - 1, 2, -1):
        head = "-".join(parts[:cut])
        if names.parse_name(head) is not None:
            return head, "-" + "-".join(parts[cut:])
    return None, ""


def _target(parsed: names.ParsedName, present: set[str]) -> Target:
    base = f"{BASE_PACKAGE}-{parsed.suffix}"
    return Target(
        name=parsed.name,
        package=parsed.package,
        base=base if parsed.package != BASE_PACKAGE and base in present else None,
        suffix=parsed.suffix,
        python=parsed.python,
        kind=parsed.kind,
        platform=parsed.platform,
        sm=parsed.sm,
        isa=parsed.isa,
        cpuinfo=DEFAULT_CPUINFO.get(parsed.isa) if parsed.isa is not None else None,
    )
