"""Matrix entries' current input fingerprints, computed again at the built commit.

`mark-green` records only what it can vouch for: the entry must be one the matrix makes for
this branch (its name, and its members where they are named), and the fingerprint it was
handed must be the one the checked-out commit has now, of the same kind. A stale matrix, a
typo or a forged value is refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from ci_tools.base.errors import InputError
from ci_tools.catalog.yamlsrc import did_you_mean
from ci_tools.plan import matrix
from ci_tools.plan.checkout import Checkout
from ci_tools.plan.fingerprint import Fingerprinter
from ci_tools.plan.kinds import FingerprintKind
from ci_tools.plan.matrix import Entry, Group, Selection
from ci_tools.plan.runners import Inventory
from ci_tools.plan.source import Source


def find_entry(source: Source, inventory: Inventory, stack: str, members: Sequence[str]) -> Entry:
    """The entry named `stack` the matrix makes for the branch, stacked (the default) or one
    per package (`--group none`); with `members`, the one made of exactly them (the matrix
    makes a narrower stack when a selection picked only some of its packages)."""
    known = {t.name for t in source.targets}
    unknown = [m for m in members if m not in known]
    if unknown:
        raise InputError(
            f"{', '.join(unknown)}: not a variant of branch {source.branch}"
            f"{did_you_mean(unknown[0], known)}"
        )
    selection = Selection(select=tuple(members)) if members else Selection()
    names: set[str] = set()
    for group in (Group.STACK, Group.NONE):
        for entry in matrix.plan(
            source.targets, selection, inventory, branch=source.branch, group=group
        ):
            names.add(entry.name)
            if entry.name == stack and (not members or list(entry.packages) == list(members)):
                return entry
    if stack in names:
        raise InputError(
            f"the matrix's entry {stack} is not made of {' '.join(members)}: pass the entry's "
            "packages in its order, as the matrix lists them"
        )
    raise InputError(
        f'"{stack}" is not an entry of the matrix of branch {source.branch}'
        f"{did_you_mean(stack, names)}"
    )


class EntryFinder:
    """`find_entry` for many entries: the branch's whole matrix is planned once (both
    groupings); an entry made of fewer packages (a selection's) is looked for on its own."""

    def __init__(self, source: Source, inventory: Inventory) -> None:
        self.source = source
        self.inventory = inventory
        self.planned: dict[tuple[str, tuple[str, ...]], Entry] = {}
        for group in (Group.STACK, Group.NONE):
            for entry in matrix.plan(
                source.targets, Selection(), inventory, branch=source.branch, group=group
            ):
                self.planned.setdefault((entry.name, tuple(entry.packages)), entry)

    def find(self, stack: str, members: Sequence[str]) -> Entry:
        found = self.planned.get((stack, tuple(members)))
        if found is not None:
            return found
        return find_entry(self.source, self.inventory, stack, members)


def current_fingerprint(
    checkout: Checkout, source: Source, entry: Entry, kind: FingerprintKind
) -> str:
    """The fingerprint of `entry` at HEAD, of `kind`."""
    return current_fingerprints(checkout, source, [entry], kind)[entry.name]


def current_fingerprints(
    checkout: Checkout, source: Source, entries: Sequence[Entry], kind: FingerprintKind
) -> dict[str, str]:
    """Entry name -> its fingerprint at HEAD, of `kind`: one pass over the tree for all."""
    from ci_tools.plan.schedule import reader_for

    fingerprinter = Fingerprinter(reader_for(kind))
    stacks = {entry.name: entry.packages for entry in entries}
    return dict(fingerprinter.stacks(checkout.head, stacks, source.head_facts()).by_stack)
