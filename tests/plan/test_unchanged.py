"""The `--since` shortcut: a stack called unchanged without Nix has the same fingerprint at
both commits (checked against fingerprints computed at both, after random edits of this
checkout's recipes and builders), and a push that touches no input calls every stack so."""

from __future__ import annotations

import hashlib
import random
import shutil
from collections.abc import Mapping

import pytest

from ci_tools.plan.checkout import Tree
from ci_tools.plan.fingerprint import Fingerprinter
from ci_tools.plan.nixinputs import NixReader
from ci_tools.plan.unchanged import head_texts, surely_unchanged
from tests.conftest import REPO_ROOT

RECIPES = ".flox/pkgs"


def repository() -> dict[str, str]:
    """This checkout's recipes, shared Nix code and flox environment, and a README."""
    files = {
        path.relative_to(REPO_ROOT).as_posix(): path.read_text(encoding="utf-8")
        for folder in (RECIPES, "nix")
        for path in sorted((REPO_ROOT / folder).rglob("*.nix"))
    }
    files[".flox/env/manifest.toml"] = "version = 1\n"
    files["README.md"] = "# builds\n"
    return files


def tree(files: Mapping[str, str], label: str) -> Tree:
    data = {p: t.encode() for p, t in files.items()}
    ids = {p: hashlib.sha1(d, usedforsecurity=False).hexdigest() for p, d in data.items()}
    return Tree(label=label, files=ids, load=lambda paths: {p: data[p] for p in paths})


def stacks_of(files: Mapping[str, str]) -> dict[str, list[str]]:
    """One stack a recipe, and one of each recipe with its neighbour in name order."""
    names = sorted(
        p.removeprefix(f"{RECIPES}/").removesuffix(".nix") for p in files if p.startswith(RECIPES)
    )
    out = {name: [name] for name in names}
    out |= {f"{a}+{b}": [a, b] for a, b in zip(names[::2], names[1::2], strict=False)}
    return out


def compare(
    base_files: Mapping[str, str], head_files: Mapping[str, str], *, use_nix: bool
) -> tuple[frozenset[str], set[str]]:
    """The stacks the shortcut calls unchanged, and those whose fingerprints really differ."""
    head, base = tree(head_files, "HEAD"), tree(base_files, "REF")
    stacks = stacks_of(base_files)
    facts = {name: "facts" for members in stacks.values() for name in members}
    same = surely_unchanged(head, base, stacks, (facts, facts), head_texts(head))
    fingerprinter = Fingerprinter(NixReader(use_nix=use_nix))
    now = fingerprinter.stacks(head, stacks, facts).by_stack
    before = fingerprinter.stacks(base, stacks, facts).by_stack
    return same, {s for s in stacks if now[s] != before[s]}


def edit(files: dict[str, str], rng: random.Random) -> str:
    """One random edit, of the kinds a push makes; returns what it did."""
    nix = sorted(p for p in files if p.endswith(".nix"))
    path = rng.choice(nix)
    kind = rng.choice(["comment", "body", "delete", "add-near", "add-builder", "reference", "docs"])
    if kind == "comment":
        files[path] += "# a comment\n"
    elif kind == "body":
        files[path] = files[path].replace("{", "{ x = 1;", 1) if "{" in files[path] else "1"
    elif kind == "delete":
        del files[path]
    elif kind == "add-near":
        files[path.rsplit("/", 1)[0] + "/added.nix"] = "{ }: { }\n"
    elif kind == "add-builder":
        files["nix/builders/extra.nix"] = "{ }: import ./common.nix\n"
    elif kind == "reference":
        files[path] = (
            f"# uses ./{rng.choice(['added.nix', 'common.nix', 'torch-cpu.nix'])}\n" + files[path]
        )
    else:
        files["README.md"] += "more\n"
    return f"{kind} {path}"


@pytest.mark.parametrize(
    "use_nix",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                shutil.which("nix-instantiate") is None, reason="needs nix-instantiate"
            ),
        ),
    ],
)
def test_a_stack_called_unchanged_has_the_same_fingerprint(use_nix: bool) -> None:
    rng = random.Random(31)
    base = repository()
    for _ in range(12 if use_nix else 40):
        head = dict(base)
        done = [edit(head, rng) for _ in range(rng.randint(1, 3))]
        same, differ = compare(base, head, use_nix=use_nix)
        assert not same & differ, (done, sorted(same & differ))


def test_a_push_that_touches_no_input_calls_every_stack_unchanged() -> None:
    base = repository()
    head = {**base, "README.md": "# other docs\n", "nix/unused.nix": "{ }: { }\n"}
    same, differ = compare(base, head, use_nix=False)
    assert same == set(stacks_of(base)) and not differ


def test_a_changed_builder_leaves_only_its_importers_to_fingerprint() -> None:
    base = repository()
    head = {**base, "nix/builders/torch-cpu.nix": base["nix/builders/torch-cpu.nix"] + "\n# x\n"}
    same, differ = compare(base, head, use_nix=False)
    left = set(stacks_of(base)) - same
    assert left == differ  # raw bytes: the comment counts; every importer, and no other
    assert left and all("-cpu-" in s for s in left)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({".flox/env/manifest.toml": "version = 2\n"}, "an environment file"),
        ({"nix/builders/common.nix": None}, "a deleted builder every recipe reaches"),
    ],
)
def test_what_every_stack_reaches_leaves_none_unchanged(
    change: dict[str, str | None], reason: str
) -> None:
    base = repository()
    head = {**base, **{p: t for p, t in change.items() if t is not None}}
    for path in (p for p, t in change.items() if t is None):
        del head[path]
    same, _ = compare(base, head, use_nix=False)
    assert not same, reason


def test_a_symbolic_link_leaves_every_stack_to_fingerprint() -> None:
    files = repository()
    head = tree(files, "HEAD")
    linked = Tree(label="HEAD", files=head.files, load=head.load, links={"nix/l.nix": None})
    stacks = stacks_of(files)
    facts = {name: "f" for members in stacks.values() for name in members}
    assert surely_unchanged(linked, head, stacks, (facts, facts), head_texts(head)) == set()


def test_changed_facts_leave_their_stacks_to_fingerprint() -> None:
    files = repository()
    head = tree(files, "HEAD")
    stacks = stacks_of(files)
    names = sorted({n for members in stacks.values() for n in members})
    before = {n: "facts" for n in names}
    now = {**before, names[0]: "other"}
    same = surely_unchanged(head, head, stacks, (now, before), head_texts(head))
    assert {s for s in stacks if names[0] in stacks[s]} == set(stacks) - same


NEEDS_NIX = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None, reason="needs nix-instantiate"
)


@pytest.mark.parametrize(
    ("recipe", "use_nix"),
    [
        # A path right after a block comment's close (`*/`): Nix's lexer and the raw one
        # read `../../nix/b.nix` there.
        ("{ }: import /* the builder */../../nix/b.nix", False),
        pytest.param("{ }: import /* the builder */../../nix/b.nix", True, marks=NEEDS_NIX),
        # Read raw (without Nix, or where Nix refuses the file), `x./` before an
        # interpolation names `./`'s folder (nixraw's `_RAW_INTERPOLATED`).
        ("{ v }: ab./../../nix/${v}", False),
    ],
)
def test_a_changed_file_a_recipe_reaches_leaves_its_stack_to_fingerprint(
    recipe: str, use_nix: bool
) -> None:
    base = {f"{RECIPES}/a.nix": recipe + "\n", "nix/b.nix": "{ }: 1\n"}
    head = {**base, "nix/b.nix": "{ }: 2\n"}
    same, differ = compare(base, head, use_nix=use_nix)
    assert differ == {"a"}
    assert not same & differ


@NEEDS_NIX
def test_a_reference_out_of_the_repository_names_none_of_its_files() -> None:
    # `../../../r0/nix/b.nix` leaves the repository; Nix's parse, in a temporary folder of
    # one folder a version (`r0/...`), must not read it as the repository's `nix/b.nix`.
    recipe = f"{RECIPES}/a.nix"
    text = b"{ }: import ../../../r0/nix/b.nix\n"
    assert NixReader(use_nix=True).read({recipe: text})[recipe].references == ()
    base = {recipe: text.decode(), "nix/b.nix": "{ }: 1\n"}
    same, differ = compare(base, {**base, "nix/b.nix": "{ }: 2\n"}, use_nix=True)
    assert not same & differ
