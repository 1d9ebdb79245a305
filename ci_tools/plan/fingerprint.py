"""The input fingerprint of a stack: one hash over everything that decides what it builds.

Inputs, and nothing else:
* the normalised Nix (`nixinputs`) of each member's recipe (`.flox/pkgs/<name>.nix`, or every
  file of `.flox/pkgs/<name>/`) and of every file it references, transitively, wherever it
  lies in the repository (`../../nix/builders/x.nix` included); a non-Nix file a recipe
  references (a patch) by its git blob id; a reference to nothing by its path, marked
  missing (deleting or renaming an imported file changes its importers' fingerprints); a
  symbolic link by its target's path, and the file it leads to as one it references (Nix
  follows links before reading a file, so a link's target is what builds);
* the catalog facts that reach the build or its checks (`build_facts`);
* `.flox/env/manifest.toml` and `.flox/env/manifest.lock`;
* the normalisation used (Nix's parse, or raw bytes without Nix), so the two never compare
  equal by accident; the fingerprint's text also names it (`kinds`: `nix-...`, `raw-...`),
  so that no reader compares fingerprints of two kinds.
The nixpkgs pin reaches it twice: as a catalog fact, and as the text of the recipe or pin
file that names it. Docs, tests, `.flox/.gitignore`, templates and line numbers are not inputs.

A tree (`checkout.Tree`) is the build repository at one commit (read through git: what is
committed is what a runner builds) or, outside git, the files of a folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ci_tools.catalog import layout
from ci_tools.catalog.model import Catalog
from ci_tools.catalog.variants import Variant
from ci_tools.plan.checkout import Tree
from ci_tools.plan.kinds import FingerprintKind, compose
from ci_tools.plan.nixinputs import NixFile, NixReader, resolve

_SHARED = (f"{layout.NIX_DIR}/", f"{layout.PKGS_DIR}/lib/")
ENV_FILES = (layout.MANIFEST, layout.MANIFEST_LOCK)
FINGERPRINT_VERSION = 1


def recipe_files(
    name: str, files: Mapping[str, str], folders: Mapping[str, list[str]]
) -> list[str]:
    """The files that are package `name` (flox's NEF: `<name>.nix` or `<name>/default.nix`)."""
    path = layout.recipe_path(name)
    if path in files:
        return [path]
    return sorted(folders.get(f"{layout.PKGS_DIR}/{name}", []))


@dataclass(frozen=True, kw_only=True)
class Fingerprints:
    by_stack: Mapping[str, str]  # stack -> `<kind>-<hex>`
    problems: tuple[str, ...]  # references to nothing, files Nix cannot parse
    kind: FingerprintKind


class Fingerprinter:
    """Fingerprints of stacks at trees; one reader, so a file seen once is parsed once."""

    def __init__(self, reader: NixReader) -> None:
        self.reader = reader
        # (path, content id) -> what the reader made of it: a file one tree shares with
        # another (most of them, between REF and HEAD) is not even read from git again.
        self._known: dict[tuple[str, str], NixFile] = {}

    @property
    def kind(self) -> FingerprintKind:
        return FingerprintKind.NIX if self.reader.use_nix else FingerprintKind.RAW

    def stacks(
        self,
        tree: Tree,
        stacks: Mapping[str, Sequence[str]],
        facts: Mapping[str, Hashable],
    ) -> Fingerprints:
        """`stacks`: entry name -> member variant names; `facts`: variant name -> facts
        (a name absent from `facts` has none at this tree, which is itself a fact)."""
        folders = tree.folders()
        names = sorted({n for members in stacks.values() for n in members})
        starts = {n: recipe_files(n, tree.files, folders) for n in names}
        graph, nix, missing = self._graph(tree, folders, [p for s in starts.values() for p in s])
        env = [(p, tree.files.get(p, "missing")) for p in ENV_FILES]
        per_variant: dict[str, object] = {}
        reached: set[str] = set()
        for name in names:
            paths = _reach(starts[name], graph)
            reached |= paths
            per_variant[name] = {
                "name": name,
                "recipe": bool(starts[name]),
                "facts": repr(facts.get(name)),
                "files": [[p, _digest(p, tree, nix)] for p in sorted(paths)],
                "missing": sorted({r for p in paths for r in missing.get(p, ())}),
            }
        # Only what the stacks use is reported: a prefetched file nothing imports is no input.
        problems = _problems(tree, {p: f for p, f in nix.items() if p in reached}, missing)
        out: dict[str, str] = {}
        for stack, members in stacks.items():
            document = {
                "version": FINGERPRINT_VERSION,
                "mode": self.reader.mode,
                "env": env,
                "members": [per_variant[m] for m in members],
            }
            text = json.dumps(document, sort_keys=True, separators=(",", ":"))
            out[stack] = compose(self.kind, hashlib.sha256(text.encode()).hexdigest())
        return Fingerprints(by_stack=out, problems=problems, kind=self.kind)

    def _graph(
        self, tree: Tree, folders: Mapping[str, list[str]], starts: Iterable[str]
    ) -> tuple[dict[str, list[str]], dict[str, NixFile], dict[str, list[str]]]:
        """Edges file -> referenced files, the Nix files read, and references to nothing."""
        graph: dict[str, list[str]] = {}
        nix: dict[str, NixFile] = {}
        missing: dict[str, list[str]] = {}
        frontier = sorted(set(starts))
        seen = set(frontier)
        prefetch = set(_shared(tree)) if frontier else set()
        while frontier:
            # A link is not read as Nix (its blob is its target's path): it leads to its target.
            nix_paths = [p for p in frontier if p.endswith(".nix") and p not in tree.links]
            wanted = sorted((set(nix_paths) | prefetch) - nix.keys())  # each file read once
            prefetch = set()
            nix.update(self._read(tree, wanted))
            found: list[str] = []
            for path in frontier:
                graph[path] = []
                if path in tree.links:
                    target = tree.links[path]
                    if target is not None:
                        graph[path].append(target)
                        found.extend([] if target in seen else [target])
                    continue
                facts = nix.get(path)
                if facts is None:
                    continue
                for ref in facts.references:
                    targets = resolve(ref, tree.files, folders)
                    if targets is None:
                        missing.setdefault(path, []).append(ref)
                        continue
                    graph[path].extend(targets)
                    found.extend(t for t in targets if t not in seen)
            frontier = sorted(set(found))
            seen.update(frontier)
        return graph, nix, missing

    def prefetch(self, trees: Sequence[Tree], stacks: Mapping[str, Sequence[str]]) -> None:
        """Read what the fingerprints of `stacks` at each of `trees` start from (the members'
        recipes and the shared Nix code) in one go: HEAD's and REF's files cost one start of
        Nix together, not one each. Each (path, content) is read once, by the first tree."""
        names = sorted({n for members in stacks.values() for n in members})
        seen: set[tuple[str, str]] = set(self._known)
        wanted: list[tuple[Tree, list[str]]] = []
        for tree in trees:
            folders = tree.folders()
            starts = [p for n in names for p in recipe_files(n, tree.files, folders)]
            paths = {p for p in starts if p.endswith(".nix") and p not in tree.links}
            paths |= set(_shared(tree)) if starts else set()
            fresh = sorted(p for p in paths if (p, tree.files[p]) not in seen)
            seen.update((p, tree.files[p]) for p in fresh)
            wanted.append((tree, fresh))
        self._read_many(wanted)

    def _read(self, tree: Tree, paths: Sequence[str]) -> dict[str, NixFile]:
        return self._read_many([(tree, paths)])[0]

    def _read_many(self, wanted: Sequence[tuple[Tree, Sequence[str]]]) -> list[dict[str, NixFile]]:
        """The Nix files `paths` of each tree, each loaded and read only if no tree of this
        fingerprinter had the same content at the same path; what is read, read together."""
        outs: list[dict[str, NixFile]] = []
        unread: list[tuple[Tree, list[str]]] = []
        for tree, paths in wanted:
            known = {p: self._known.get((p, tree.files[p])) for p in paths}
            outs.append({p: facts for p, facts in known.items() if facts is not None})
            unread.append((tree, [p for p, facts in known.items() if facts is None]))
        read = self.reader.read_many(_load_together(unread))
        for (tree, _), out, found in zip(wanted, outs, read, strict=True):
            for path, facts in found.items():
                self._known[path, tree.files[path]] = facts
                out[path] = facts
        return outs


def _load_together(wanted: Sequence[tuple[Tree, list[str]]]) -> list[Mapping[str, bytes]]:
    """The files of each tree; those of trees that share a store (one git repository's
    commits) in one read of it, not one a tree."""
    out: list[Mapping[str, bytes]] = [{} for _ in wanted]
    stores: dict[Callable[[Sequence[str]], Mapping[str, bytes]], list[int]] = {}
    for index, (tree, paths) in enumerate(wanted):
        if paths and tree.blobs is None:
            out[index] = tree.load(paths)
        elif paths and tree.blobs is not None:
            stores.setdefault(tree.blobs, []).append(index)
    for read, indexes in stores.items():
        data = read([wanted[i][0].files[p] for i in indexes for p in wanted[i][1]])
        for i in indexes:
            tree, paths = wanted[i]
            out[i] = {p: data[tree.files[p]] for p in paths}
    return out


def every_start(tree: Tree) -> list[str]:
    """What `prefetch` of every stack reads at `tree`, told without the catalog (which
    names the stacks): every Nix file in the recipes' folder and the shared code's, links
    aside; more than it reads where the plan leaves recipes out (`--select`)."""
    starts = (f"{layout.PKGS_DIR}/", *_SHARED)
    return sorted(
        p for p in tree.files if p.endswith(".nix") and p.startswith(starts) and p not in tree.links
    )


def _shared(tree: Tree) -> list[str]:
    """Shared Nix code lives in these folders: parsing it with the recipes saves Nix a start
    per import depth; files elsewhere are read when something references them."""
    return [
        p
        for p in tree.files
        if p.endswith(".nix") and p.startswith(_SHARED) and p not in tree.links
    ]


def _reach(starts: Iterable[str], graph: Mapping[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(starts)
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        stack.extend(graph.get(path, ()))
    return seen


def _digest(path: str, tree: Tree, nix: Mapping[str, NixFile]) -> str:
    parsed = nix.get(path)
    return parsed.digest if parsed is not None else "blob:" + tree.files[path]


def _problems(
    tree: Tree, nix: Mapping[str, NixFile], missing: Mapping[str, list[str]]
) -> tuple[str, ...]:
    out: list[str] = []
    for path, refs in sorted(missing.items()):
        in_code = nix[path].in_code
        # Raw text that does not lex leaves it open whether a reference sits in a comment:
        # the report says so rather than staying silent.
        hedge = (
            ""
            if in_code is not None
            else " (read from the raw text without Nix: it may sit in a comment)"
        )
        for ref in refs:
            if in_code is not None and ref not in in_code:
                continue  # a comment's or a string's, no import: it still counts as an input
            out.append(
                f"{path} references {ref.rstrip('/')}, which is not in {tree.label}{hedge}: "
                "its importers are scheduled and will fail to evaluate until it is restored "
                "or the reference is removed"
            )
    for path, facts in sorted(nix.items()):
        if facts.error is not None:
            out.append(f"{path}: Nix cannot parse it ({facts.error}); compared as raw bytes")
    return tuple(out)


def build_facts(variant: Variant, catalog: Catalog) -> Hashable:
    """The catalog facts that decide a variant's build and its checks.

    A field counts when it changes what `flox build` produces or what `ci-tools test`
    expects of it. Descriptive fields do not: a GPU's `family` and `hardware` list, an ISA's
    `description`, `hardware`, `workload` and `level`, a branch's `min_driver`, and the
    versions of packages the variant is not built from. Branch and toolkit attributes are
    read with `getattr`, so a catalog that moves the CUDA version or the pin from the branch
    to a per-toolkit record (several toolkits per branch) still fingerprints: the variant's
    `cuda`, `toolkit` and `nixpkgs`, when it has them, count with every field but where the
    catalog declares them (`line`, `*_lines`) and `min_driver`.
    """
    branch = variant.branch
    packages = [variant.package]
    if variant.package.requires is not None:
        packages.append(catalog.packages[variant.package.requires])
    package_facts = tuple(
        (p.name, p.attribute, p.import_name, p.requires, branch.versions.get(p.name))
        for p in packages
    )
    gpu = variant.gpu
    isa = variant.isa
    return (
        variant.name,
        variant.kind,
        variant.python,
        package_facts,
        tuple(
            repr(getattr(branch, field, None))
            for field in ("cuda", "nixpkgs_rev", "nixpkgs_sha256", "cuda_packages", "overlays")
        ),
        # Per-variant toolkit facts, where the catalog has several CUDA toolkits (each with
        # its own pin) per branch; absent today, so read defensively.
        tuple(
            record_facts(getattr(variant, field, None)) for field in ("cuda", "toolkit", "nixpkgs")
        ),
        None if gpu is None else (gpu.capability, gpu.cudnn),
        None
        if isa is None
        else (
            isa.platform,
            isa.compiler_flags,
            isa.cpuinfo,
            isa.torch_capability,
            isa.disables,
        ),
    )


# Fields of catalog records that say where or for whom, not what is built.
_NOT_BUILD_FIELDS = ("line", "min_driver", "description", "hardware", "family")


def record_facts(value: object) -> str:
    """A record's build-relevant fields as text; any other value by `repr`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kept = (
            f"{f.name}={record_facts(getattr(value, f.name))}"
            for f in dataclasses.fields(value)
            if f.name not in _NOT_BUILD_FIELDS and not f.name.endswith("_lines")
        )
        return f"{type(value).__name__}({', '.join(kept)})"
    return repr(value)
