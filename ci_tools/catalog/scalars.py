"""The scalar kinds of value of a declared file (see `shape.py`): strings by their `grammar`
rule, versions, whole numbers, booleans and words from a list. Like the shapes there, frozen
dataclasses compared by identity (no generated __eq__ or __repr__ to compile at each start)."""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.catalog import grammar
from ci_tools.catalog.shape import Shape, shown
from ci_tools.catalog.yamlsrc import Node, Problems, did_you_mean, kind_of


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _spelt(value: object) -> str:
    return str(getattr(value, "text", value))


@dataclass(frozen=True, eq=False, repr=False)
class Text(Shape):
    """A string that follows `rule` (free prose when None); `hint` replaces the rule's own
    words for what is right (`must look like "sm90"`)."""

    rule: grammar.Rule | None = None
    hint: str = ""

    def check(self, node: Node, what: str, problems: Problems) -> str | None:
        value = node.value
        if isinstance(value, bool) or value is None or isinstance(value, dict | list):
            problems.add(node.file, node.line, f"{what} must be a string, got {kind_of(value)}")
            return None
        if not isinstance(value, str):
            problems.add(
                node.file,
                node.line,
                f'{what} must be a string (quote it: "{_spelt(value)}"), got {kind_of(value)}',
            )
            return None
        why = self.problem(value)
        if why is not None:
            problems.add(node.file, node.line, f'{what} "{shown(value)}" {why}')
            return None
        return value

    def problem(self, text: str) -> str | None:
        why = grammar.text_problem(text) if self.rule is None else self.rule.problem(text)
        if why is None:
            return None
        return self.hint or why


@dataclass(frozen=True, eq=False, repr=False)
class StoreUrl(Text):
    """A Nix store URL (`grammar.STORE_URL`); a setting that makes Nix read a local file is
    named, with the fix, rather than the URL called malformed."""

    def problem(self, text: str) -> str | None:
        local = grammar.local_file_settings(text)
        if local:
            return (
                f"sets `{local[0]}`, which makes Nix read a file of the machine it runs on "
                "(the Nix manual's store settings): remove it; build legs sign with the key "
                "from the secret signing_key_secret names"
            )
        return super().problem(text)


@dataclass(frozen=True, eq=False, repr=False)
class Version(Text):
    """A dotted version, quoted: YAML reads an unquoted 3.10 as the number 3.1."""

    rule: grammar.Rule | None = grammar.VERSION

    def check(self, node: Node, what: str, problems: Problems) -> str | None:
        if _is_number(node.value):
            why = (
                ": YAML reads an unquoted 3.10 as the number 3.1"
                if isinstance(node.value, float)
                else f", got {kind_of(node.value)}"
            )
            problems.add(
                node.file,
                node.line,
                f'{what} must be a quoted string such as "{_spelt(node.value)}"{why}',
            )
            return None
        return super().check(node, what, problems)


@dataclass(frozen=True, eq=False, repr=False)
class Int(Shape):
    """A whole number from `low` to `high`; `unit` and `why` word the message."""

    low: int
    high: int
    unit: str = ""  # " of minutes"
    why: str = ""  # " (GitHub stops self-hosted jobs after 5 days)"

    def check(self, node: Node, what: str, problems: Problems) -> int | None:
        value = node.value
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and self.low <= value <= self.high
        ):
            return value
        problems.add(
            node.file,
            node.line,
            f"{what} must be a whole number{self.unit} from {self.low} to {self.high}{self.why}, "
            f"got {kind_of(value)}",
        )
        return None

    def fits(self, node: Node) -> bool:
        return not isinstance(node.value, dict | list)


@dataclass(frozen=True, eq=False, repr=False)
class Bool(Shape):
    """true or false."""

    def check(self, node: Node, what: str, problems: Problems) -> bool | None:
        if isinstance(node.value, bool):
            return node.value
        problems.add(
            node.file, node.line, f"{what} must be true or false, got {kind_of(node.value)}"
        )
        return None


@dataclass(frozen=True, eq=False, repr=False)
class Enum(Shape):
    """One of a few words."""

    values: tuple[str, ...]

    def check(self, node: Node, what: str, problems: Problems) -> str | None:
        if not isinstance(node.value, str):
            problems.add(
                node.file,
                node.line,
                f"{what} must be one of {', '.join(self.values)}, got {kind_of(node.value)}",
            )
            return None
        why = self.problem(node.value)
        if why is not None:
            problems.add(node.file, node.line, f'{what} "{shown(node.value)}" {why}')
            return None
        return node.value

    def problem(self, text: str) -> str | None:
        if text in self.values:
            return None
        return f"is unknown{did_you_mean(text, self.values)}; known: {', '.join(self.values)}"
