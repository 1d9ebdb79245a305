"""What catalog.yaml and runners.yaml may not hold, checked on the text before libyaml parses
it: what the parser would choke on (huge numbers) or read otherwise than an editor does."""

from __future__ import annotations

import re

from ci_tools.base.errors import SourceError

# YAML 1.1 parsers (libyaml) read these as line breaks, YAML 1.2 ones (editors) do not.
_BREAKS_IN_DISPUTE = re.compile("[\x85\u2028\u2029]")


def check_text(text: str, name: str, *, max_bytes: int, max_digits: int) -> None:
    """Refuse, before parsing, what the parser would choke on (huge numbers) or read
    otherwise than an editor does. Whole-text searches: no cost per line."""
    if len(text) > max_bytes:
        raise SourceError.one(name, 1, f"larger than {max_bytes} bytes")
    problems = []
    # Anchored at the start of a run of digits, so each run is scanned once.
    number = re.search(rf"(?<![0-9_])[0-9][0-9_]{{{max_digits},}}", text)
    if number:
        problems.append((number.start(), f"a number longer than {max_digits} digits"))
    disputed = _BREAKS_IN_DISPUTE.search(text)
    if disputed:
        code = ord(disputed.group())
        problems.append(
            (
                disputed.start(),
                f"holds U+{code:04X}, which YAML 1.1 reads as a line break and YAML 1.2 as a "
                "character: remove it",
            )
        )
    mark = text.find("\ufeff", 1)  # YAML 1.2 §5.2: only at the start; libyaml lets it in
    if mark >= 0:
        problems.append((mark, "holds U+FEFF (a byte order mark) after its start: remove it"))
    if problems:
        at, message = min(problems)
        raise SourceError.one(name, text.count("\n", 0, at) + 1, message)
