"""The stacks whose fingerprint cannot differ between two commits, told without Nix.

`--since REF` builds the stacks whose fingerprints differ at REF and HEAD (`changes`).
Fingerprinting every stack at both costs a Nix parse of every recipe, where a push changes
a few files. A stack's fingerprint is made of its members' catalog facts, the environment
files, and the files its recipes reach through references (`fingerprint`); a file at the
same path with the same content reads the same at both commits. So a stack whose every
reachable file is the same at both, and whose every reference names the same files at
both, has the same fingerprint at both.

"Reachable" here follows `nixraw.broad_references`, a superset of the references of
Nix's parse and of the raw reading (comments and strings included, every place a path
token may start): a stack this module calls unchanged is unchanged; any other is
fingerprinted, exactly, at both commits. Symbolic links end the shortcut (their chains are
followed link by link, `checkout.follow_links`): with one in either tree, every stack is
fingerprinted.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from ci_tools.catalog import layout
from ci_tools.plan.checkout import Tree, folder_index
from ci_tools.plan.fingerprint import ENV_FILES, recipe_files
from ci_tools.plan.nixinputs import resolve
from ci_tools.plan.nixpaths import broad_references


def head_texts(head: Tree) -> Mapping[str, bytes]:
    """What `surely_unchanged` reads: the contents at `head` of every Nix file but links."""
    return head.load(sorted(p for p in head.files if p.endswith(".nix") and p not in head.links))


def surely_unchanged(
    head: Tree,
    base: Tree,
    stacks: Mapping[str, Sequence[str]],
    facts: tuple[Mapping[str, Hashable], Mapping[str, Hashable]],
    texts: Mapping[str, bytes],
) -> frozenset[str]:
    """The stacks (entry name -> member variants) whose fingerprint at `base` is surely the
    one at `head`; `facts`: the catalog facts at `head` and at `base`; `texts`: the
    contents at `head` of its Nix files (`head_texts`)."""
    if head.links or base.links:
        return frozenset()
    changed = {
        p for p in head.files.keys() | base.files.keys() if head.files.get(p) != base.files.get(p)
    }
    if any(p in changed for p in ENV_FILES):
        return frozenset()
    touched = changed | folder_index(changed).keys()  # and every folder above one
    dirty = _dirty(head, touched, texts)
    head_facts, base_facts = facts
    folders = head.folders()

    # REF's catalog read as HEAD's (`source`) is one mapping: no fact is made to compare.
    same_facts = head_facts is base_facts

    def same(name: str) -> bool:
        recipe = recipe_files(name, head.files, folders)
        return (
            (same_facts or repr(head_facts.get(name)) == repr(base_facts.get(name)))
            and not any(p in touched for p in _recipe_names(name))
            and not any(p in dirty for p in recipe)
        )

    kept = {name for members in stacks.values() for name in members if same(name)}
    return frozenset(s for s, members in stacks.items() if all(m in kept for m in members))


def _recipe_names(name: str) -> tuple[str, str]:
    """Where a package's recipe may be (flox's NEF): the file, or a folder of that name."""
    return layout.recipe_path(name), f"{layout.PKGS_DIR}/{name}"


def _dirty(head: Tree, touched: set[str], texts: Mapping[str, bytes]) -> set[str]:
    """The files at `head` whose reach may differ at the other commit: those changed, those
    with a reference that names a changed path or a folder above one (`touched`), and,
    transitively, those with a reference that leads to a dirty file."""
    folders = head.folders()
    referrers: dict[str, list[str]] = {}
    dirty = {p for p in head.files if p in touched}
    for path, data in texts.items():
        for ref in broad_references(path, data.decode("utf-8", "replace")):
            if ref.rstrip("/") in touched:
                dirty.add(path)
            for target in resolve(ref, head.files, folders) or ():
                referrers.setdefault(target, []).append(path)
    frontier = list(dirty)
    while frontier:
        found = [p for target in frontier for p in referrers.get(target, ()) if p not in dirty]
        dirty.update(found)
        frontier = found
    return dirty
