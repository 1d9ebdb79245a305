"""Which stacks a push changed: those whose input fingerprint differs between REF and HEAD.

Both sides are fingerprinted the same way (`fingerprint`): the normalised Nix of each
member's recipe and of every file it references, the catalog facts that reach the build,
the flox manifest and lock. So a docs-only push changes nothing; a `#` line inside a Nix
string, an imported helper, a deleted import, a moved pin all change what they change.
This is the `--since REF` mode; the plan job's normal mode asks which fingerprints are
already green (`statuses`), and this is its fallback without a token.

Cost: two `git ls-tree`, one `git cat-file --batch` for the Nix files HEAD's working tree
does not hold as committed and those that differ at REF, and, when the catalog is in use and
differs at REF (its blob id in REF's listing), one `git show` of it there. With `--since`
alone (`narrowed`), the stacks that `unchanged` finds surely unchanged from the raw text
are not fingerprinted; the rest are, at both commits, with one `nix-instantiate --parse`
for their recipes and shared Nix code (files equal at both commits are parsed once;
`Fingerprinter.prefetch`) and one more per import depth beyond them. Where every
fingerprint is wanted (`--until-green`'s fallback), every stack is fingerprinted so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from ci_tools.plan.checkout import Checkout, Tree
from ci_tools.plan.fingerprint import Fingerprinter, Fingerprints

# GitHub sends the all-zero id as `github.event.before` for a new branch.
_ZERO_SHA = re.compile(r"0{40}(0{24})?")

# variant facts at a commit (`Base`: the commit and its tree); a string: unknown there, and
# why (the catalog there is invalid or missing)
FactsAt = Callable[["Base"], "Mapping[str, Hashable] | str"]


@dataclass(frozen=True, kw_only=True)
class ChangeSet:
    """The stacks to build; `stacks is None` means all of them (see `notice` for why)."""

    stacks: frozenset[str] | None
    notice: str | None

    @classmethod
    def full(cls, notice: str) -> ChangeSet:
        return cls(stacks=None, notice=notice)


@dataclass(frozen=True, kw_only=True)
class Base:
    """The commit `--since REF` names, and its tree."""

    commit: str
    tree: Tree


def base_of(checkout: Checkout, ref: str) -> Base | ChangeSet:
    """The commit `ref` names and its tree; where there is none, the full matrix and why."""
    if _ZERO_SHA.fullmatch(ref):
        return ChangeSet.full(
            f"--since {ref}: no previous commit (a new branch); scheduling the full matrix"
        )
    git = checkout.git
    if git is None:
        return ChangeSet.full(
            f"--since {ref}: {checkout.root} is not in a git repository with commits; "
            "scheduling the full matrix"
        )
    commit = git.resolve_commit(ref)
    if commit is None:
        return ChangeSet.full(
            f"--since {ref}: this clone has no such commit (a force push, or a shallow clone: "
            "check out with fetch-depth: 0); scheduling the full matrix"
        )
    return Base(commit=commit, tree=checkout.tree(commit, ref))


def since(
    checkout: Checkout,
    ref: str,
    *,
    stacks: Mapping[str, Sequence[str]],
    head: Fingerprints,
    fingerprinter: Fingerprinter,
    facts_at: FactsAt,
    base: Base | ChangeSet | None = None,
) -> ChangeSet:
    """The stacks whose fingerprint at `ref` differs from `head` (computed at HEAD); `base`:
    what `base_of` said of `ref`, when the caller asked it already.

    Both sides must be of one kind (`kinds`): Nix's parse and raw bytes differ for the same
    inputs, so a comparison across kinds would call every stack changed; it is refused, and
    everything scheduled with a notice that says why."""
    if head.kind is not fingerprinter.kind:
        return ChangeSet.full(
            f"--since {ref}: HEAD's fingerprints are of {head.kind.description}, the "
            f"comparison's would be of {fingerprinter.kind.description}; fingerprints of two "
            "kinds are never compared: scheduling the full matrix"
        )
    found = base if base is not None else base_of(checkout, ref)
    if isinstance(found, ChangeSet):
        return found
    facts = facts_at(found)
    if isinstance(facts, str):
        return ChangeSet.full(f"--since {ref}: {facts}; scheduling the full matrix")
    before = fingerprinter.stacks(found.tree, stacks, facts)
    changed = {s for s in stacks if before.by_stack.get(s) != head.by_stack.get(s)}
    return ChangeSet(stacks=frozenset(changed), notice=None)


def narrowed(
    checkout: Checkout,
    base: Base,
    stacks: Mapping[str, Sequence[str]],
    *,
    head_facts: Mapping[str, Hashable],
    facts_at: FactsAt,
    fingerprinter: Fingerprinter,
) -> tuple[ChangeSet, Fingerprints] | None:
    """`since` where no other fingerprint than the changed stacks' is wanted (`--since`
    alone): the stacks `unchanged` finds surely unchanged are not fingerprinted, so their
    recipes cost no Nix parse; the others are, at both commits. Returns the change set and
    HEAD's fingerprints of the stacks it fingerprinted; None when the catalog at REF is
    unknown (`since` then schedules every stack, and says why)."""
    from ci_tools.plan import unchanged

    facts = facts_at(base)
    if isinstance(facts, str):
        return None
    head = checkout.head
    texts = unchanged.head_texts(head)
    same = unchanged.surely_unchanged(head, base.tree, stacks, (head_facts, facts), texts)
    maybe = {stack: members for stack, members in stacks.items() if stack not in same}
    fingerprinter.prefetch([head, base.tree], maybe)  # both commits' files: one start of Nix
    now = fingerprinter.stacks(head, maybe, head_facts)
    before = fingerprinter.stacks(base.tree, maybe, facts)
    changed = frozenset(s for s in maybe if before.by_stack[s] != now.by_stack[s])
    return ChangeSet(stacks=changed, notice=None), now
