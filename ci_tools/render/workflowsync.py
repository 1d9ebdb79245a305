"""Keep the workflows' branch lists equal to the catalog's branches.

A new branch in the catalog must also trigger CI on push and be offered by the release
form; nobody remembers that by hand. The lists are edited with ruamel.yaml's round-trip
mode so comments, quotes and layout stay. Before editing a file, the untouched document is
dumped and compared with the file: if ruamel cannot reproduce it byte for byte, the file is
refused rather than reformatted.

A list a workflow does not have is left alone (a pull_request trigger without `branches`
runs for every branch, which is a choice), except `on.push.branches` of ci.yml: without it
CI would run for branches the catalog does not know.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_tools.base import bounded
from ci_tools.base.errors import InputError, SourceError
from ci_tools.base.problem import Problem

CI_WORKFLOW = "ci.yml"
RELEASE_WORKFLOW = "release.yml"


@dataclass(frozen=True, kw_only=True)
class ListSpec:
    """Where one branch list lives in a workflow, as keys from the document's root."""

    keys: tuple[str, ...]
    required: bool = False

    @property
    def label(self) -> str:
        return ".".join(self.keys)


# Which lists each workflow must keep equal to the catalog's branches.
MANAGED: dict[str, tuple[ListSpec, ...]] = {
    CI_WORKFLOW: (
        ListSpec(keys=("on", "push", "branches"), required=True),
        ListSpec(keys=("on", "pull_request", "branches")),
    ),
    RELEASE_WORKFLOW: (ListSpec(keys=("on", "workflow_dispatch", "inputs", "branch", "options")),),
}


@dataclass(frozen=True, kw_only=True)
class StaleList:
    label: str
    line: int
    found: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class FileSync:
    """The outcome for one workflow: its stale lists and the text that fixes them."""

    path: Path
    display: str
    stale: tuple[StaleList, ...]
    new_text: str


MAX_WORKFLOW_BYTES = 4 << 20  # a workflow is a few kilobytes


def sync_file(
    path: Path, display: str, specs: Sequence[ListSpec], branches: Sequence[str]
) -> FileSync:
    try:
        text = bounded.read_text(path, MAX_WORKFLOW_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{display}: cannot read: {exc}") from None
    stale, new_text = sync_text(text, display, specs, branches)
    return FileSync(path=path, display=display, stale=stale, new_text=new_text)


def sync_text(
    text: str, display: str, specs: Sequence[ListSpec], branches: Sequence[str]
) -> tuple[tuple[StaleList, ...], str]:
    """The stale lists of one workflow's text, and the text with them set to `branches`."""
    yaml, document = _load_faithfully(text, display)
    stale = []
    for spec in specs:
        seq = _find(document, spec.keys)
        if seq is None:
            if spec.required:
                raise SourceError(
                    [Problem(display, 1, f"{spec.label} is missing: list the catalog's branches")]
                )
            continue
        if not isinstance(seq, list):
            raise SourceError(
                [Problem(display, _line_of(document, spec.keys), f"{spec.label} must be a list")]
            )
        found = tuple(str(item) for item in seq)
        if found != tuple(branches):
            stale.append(
                StaleList(label=spec.label, line=_line_of(document, spec.keys), found=found)
            )
            _replace_items(seq, branches)
    if not stale:
        return (), text
    return tuple(stale), _dump(yaml, document)


def _load_faithfully(text: str, display: str) -> tuple[Any, Any]:
    """Load with the first indentation settings under which ruamel reproduces `text` exactly."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.util import load_yaml_guess_indent

    try:
        _, guessed_sequence, guessed_offset = load_yaml_guess_indent(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise SourceError(
            [Problem(display, line, f"malformed YAML: {(exc.problem or 'unreadable').strip()}")]
        ) from None
    except YAMLError as exc:
        raise SourceError([Problem(display, 1, f"malformed YAML: {exc}")]) from None
    layouts = [(2, guessed_sequence, guessed_offset), (2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4)]
    for mapping, sequence, offset in dict.fromkeys(layouts):
        yaml = _yaml(mapping, sequence, offset)
        document = yaml.load(text)
        if _dump(yaml, document) == text:
            return yaml, _yaml(mapping, sequence, offset).load(text)
    raise SourceError(
        [
            Problem(
                display,
                1,
                "ruamel.yaml cannot rewrite this file without changing its layout (indentation "
                "or spacing it does not reproduce); edit its branch lists by hand",
            )
        ]
    )


def _yaml(mapping: int, sequence: int, offset: int) -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap long `if:` expressions
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _dump(yaml: Any, document: Any) -> str:
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def _find(document: Any, keys: Sequence[str]) -> Any:
    node = document
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _line_of(document: Any, keys: Sequence[str]) -> int:
    parent = _find(document, keys[:-1])
    lc = getattr(parent, "lc", None)
    try:
        return int(lc.key(keys[-1])[0]) + 1 if lc is not None else 1
    except (KeyError, TypeError):
        return 1


def _replace_items(seq: Any, branches: Sequence[str]) -> None:
    """Set the list's items, keeping its quoting and the comments and blank lines after it."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    styles = {type(item) for item in seq}
    style: type[str] = str
    if styles in ({DoubleQuotedScalarString}, {SingleQuotedScalarString}):
        style = styles.pop()
    comments = seq.ca.items
    kept = {str(item): comments.get(i) for i, item in enumerate(seq) if i < len(seq) - 1}
    # ruamel hangs what follows a block list (blank lines, the next key's comment) on its
    # last item: it must stay at the end of the new list.
    trailing = comments.get(len(seq) - 1) if len(seq) else None
    del seq[:]
    comments.clear()
    for index, branch in enumerate(branches):
        seq.append(style(branch))
        comment = trailing if index == len(branches) - 1 else kept.get(branch)
        if comment is not None:
            comments[index] = comment
