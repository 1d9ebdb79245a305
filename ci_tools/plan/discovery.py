"""Variants of a build repository that has recipes but no catalog, from its recipe files.

Strict: every file under `.flox/pkgs/` is a variant of the grammar (`names`; `nameparse`, with
its declared aliases) or a reported problem, unless it is ignored: by a glob of the settings file
(`ci-tools.yaml`'s `ignore:`) or by name (`--ignore`). flox's NEF names packages by path
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

from ci_tools.catalog import builtin, layout, nameparse
from ci_tools.catalog.settings import Settings
from ci_tools.catalog.yamlsrc import did_you_mean
from ci_tools.plan.matrix import Target

_OLD_PYTHON = re.compile(r"-python3[0-7]-")

# The package every other package of a stack builds against.
BASE_PACKAGE = "pytorch"
# The packages a build repository without a catalog may hold (barstoolbluz/build-pytorch
# has these three); any other prefix is a misspelling or needs a catalog.
KNOWN_PACKAGES = tuple(builtin.PACKAGES)

# /proc/cpuinfo flags per ISA: the built-in facts. These are also the ISAs a name may carry.
DEFAULT_CPUINFO: Mapping[str, tuple[str, ...]] = {
    name: isa.cpuinfo for name, isa in builtin.ISAS.items()
}


@dataclass(frozen=True, kw_only=True)
class Discovered:
    targets: tuple[Target, ...]
    parsed: tuple[nameparse.ParsedName, ...]  # what each target's name says, in the same order
    problems: tuple[str, ...]  # "<file>: <what is wrong and what would be right>"
    ignored: tuple[str, ...]  # files left out by a glob or by name


def discover(
    files: Iterable[str],
    *,
    ignore: Iterable[str] = (),
    pkgs_dir: str,
    settings: Settings = Settings(),  # noqa: B008 - frozen, never changed
) -> Discovered:
    """`files`: every file under `pkgs_dir`, as paths relative to it."""
    ignored_names = set(ignore)
    top_files, folders, ignored = _by_place(files, settings, pkgs_dir)
    problems: list[str] = []
    candidates: list[tuple[str, str]] = []  # (package name, the file that declares it)
    for file in top_files:
        stem = file.removesuffix(".nix")
        if stem in ignored_names or file in ignored_names:
            ignored.append(f"{pkgs_dir}/{file}")
        elif not file.endswith(".nix"):
            problems.append(
                f"{pkgs_dir}/{file}: not a recipe (only <name>.nix and <name>/default.nix are "
                f"packages): move it out of {pkgs_dir}/, or ignore it ({_IGNORE})"
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
                f"one package, or ignore it ({_IGNORE})"
            )
    parsed: list[nameparse.ParsedName] = []
    for name, file in candidates:
        found, problem = _check(name, settings.builds)
        if found is not None:
            parsed.append(found)
        else:
            problems.append(f"{file}: {problem}; or ignore it ({_IGNORE})")
    present = {p.name for p in parsed}
    return Discovered(
        targets=tuple(_target(p, present) for p in parsed),
        parsed=tuple(parsed),
        problems=tuple(problems),
        ignored=tuple(ignored),
    )


_IGNORE = f"a glob under `ignore:` in {layout.SETTINGS}, or --ignore NAME"


def _by_place(
    files: Iterable[str], settings: Settings, pkgs_dir: str
) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """(files directly in the folder, folder -> its files, files the settings ignore)."""
    top_files: list[str] = []
    folders: dict[str, list[str]] = {}
    skipped: list[str] = []
    for rel in sorted(files):
        head, sep, rest = rel.partition("/")
        if settings.ignores(rel):
            skipped.append(f"{pkgs_dir}/{rel}")
        elif sep:
            folders.setdefault(head, []).append(rest)
        else:
            top_files.append(rel)
    return top_files, folders, skipped


def _check(name: str, builds: tuple[str, ...]) -> tuple[nameparse.ParsedName | None, str]:
    parsed = nameparse.parse_name(name, builds)
    if parsed is None:
        fixed = nameparse.respell(name)
        if fixed is not None:
            return None, f'"{name}" is not a variant name: did you mean "{fixed}"?'
        if _OLD_PYTHON.search(name):
            return None, (
                f'"{name}" is not a variant name: python<3 and the minor version> is '
                "python39, python311, python313 ... (python31 would be Python 3.1)"
            )
        head, extra = _grammar_prefix(name, builds)
        if head is not None:
            return None, (
                f'"{name}" is not a variant name: "{extra}" after "{head}" is outside the '
                f"grammar; if it marks another build of that variant, add "
                f'"{extra.lstrip("-")}" under `builds:` in {layout.SETTINGS}'
            )
        return None, f'"{name}" is not a variant name ({nameparse.GRAMMAR})'
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


def _grammar_prefix(name: str, builds: tuple[str, ...]) -> tuple[str | None, str]:
    """The longest leading part of `name`, cut at a "-", that is a variant name."""
    parts = name.split("-")
    for cut in range(len(parts) - 1, 2, -1):
        head = "-".join(parts[:cut])
        if nameparse.parse_name(head, builds) is not None:
            return head, "-" + "-".join(parts[cut:])
    return None, ""


def _target(parsed: nameparse.ParsedName, present: set[str]) -> Target:
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
        build=parsed.build,
    )
