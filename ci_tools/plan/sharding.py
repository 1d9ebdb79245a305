"""The matrix as the workflow takes it (`--github-output`): shards of at most 256 entries,
within GitHub's 1 MB of job outputs. Pure: no files, no processes.

Apart from `matrix` so that a matrix for people (no `--github-output`) does not compile it.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from typing import TypeVar

from ci_tools.base.errors import InputError
from ci_tools.plan.matrix import DEFAULT_MAX_SHARDS, SHARD_SIZE, Row

# GitHub: "Outputs can be a maximum of 1 MB per job ... Size is approximated based on UTF-16
# encoding" (docs: "Passing information between jobs"). The matrices' share of the plan job's
# outputs, in UTF-16 bytes; the rest (count, shards, flags) stays far below the difference.
MATRIX_OUTPUT_BUDGET = 900_000
# The workflows' greens job hands each shard to ci-tools through one environment variable,
# and Linux refuses to start a program with an environment string ("NAME=value") over
# MAX_ARG_STRLEN, 32 pages of 4 KiB (execve(2), "Limits on size of arguments and
# environment"): each shard's JSON stays under it, with room for the name.
SHARD_TEXT_BUDGET = 131_072 - 1_024
_EMPTY_MATRIX = '{"include":[]}'

T = TypeVar("T")


def shard(items: Sequence[T], max_shards: int = DEFAULT_MAX_SHARDS) -> list[tuple[T, ...]]:
    """Split into the fewest shards of at most SHARD_SIZE entries, sizes within one of each
    other so the shard jobs finish together. More than `max_shards` is bad input."""
    if not items:
        return []
    count = math.ceil(len(items) / SHARD_SIZE)
    if count > max_shards:
        raise InputError(
            f"the matrix has {len(items)} entries: that needs {count} shards of at most "
            f"{SHARD_SIZE} (GitHub's limit per matrix), more than --max-shards {max_shards}. "
            "Narrow it with --package/--platform/--select/--skip, or pass --max-shards "
            f"{count} and give the workflow a build job for each of matrix-0 ... "
            f"matrix-{count - 1}"
        )
    return [tuple(items[part.start : part.stop]) for part in _parts(len(items))]


def _parts(count: int) -> list[range]:
    """The indexes of each shard of `count` entries: the fewest of at most SHARD_SIZE, their
    sizes within one of each other."""
    if count == 0:
        return []
    base, extra = divmod(count, math.ceil(count / SHARD_SIZE))
    out: list[range] = []
    start = 0
    for index in range(math.ceil(count / SHARD_SIZE)):
        size = base + (1 if index < extra else 0)
        out.append(range(start, start + size))
        start += size
    return out


def fit(matrix_rows: Sequence[Row], max_shards: int = DEFAULT_MAX_SHARDS) -> int:
    """How many of `matrix_rows`, from the first, one run can take: at most `max_shards`
    matrices of SHARD_SIZE entries, their JSON within MATRIX_OUTPUT_BUDGET and each shard's
    within SHARD_TEXT_BUDGET. The rest wait for the next run (with --until-green a later push
    plans them, as the first turn green)."""
    limit = min(len(matrix_rows), max_shards * SHARD_SIZE)
    texts = [json.dumps(row, separators=(",", ":")) for row in matrix_rows[:limit]]
    used = 0
    for index, text in enumerate(texts):
        # Each row and its comma, and each shard's `{"include":[]}` as the shards grow.
        used += _utf16(text) + 2
        if index % SHARD_SIZE == 0:
            used += _utf16(_EMPTY_MATRIX)
        if used > MATRIX_OUTPUT_BUDGET:
            limit = index
            break
    ends = list(itertools.accumulate((len(text.encode()) + 1 for text in texts), initial=0))
    while limit > 0 and _largest_shard_bytes(ends, limit) > SHARD_TEXT_BUDGET:
        limit -= 1
    return limit


def _largest_shard_bytes(ends: Sequence[int], count: int) -> int:
    """The bytes of the largest shard's JSON when the first `count` rows are sharded; `ends`:
    where each row (and its comma) ends in their concatenation."""
    return max(
        ends[part.stop] - ends[part.start] - 1 + len(_EMPTY_MATRIX) for part in _parts(count)
    )


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le"))


def github_outputs(
    matrix_rows: Sequence[Row], max_shards: int = DEFAULT_MAX_SHARDS
) -> dict[str, str]:
    """`count`, `shards` and `matrix-0` ... `matrix-N` (at least four, unused ones empty),
    each matrix compact JSON on one line."""
    shards = shard(matrix_rows, max_shards)
    outputs = {"count": str(len(matrix_rows)), "shards": str(len(shards))}
    for index in range(max(max_shards, DEFAULT_MAX_SHARDS)):
        members = list(shards[index]) if index < len(shards) else []
        outputs[f"matrix-{index}"] = json.dumps({"include": members}, separators=(",", ":"))
    return outputs
