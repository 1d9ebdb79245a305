"""The fuzz suite's knobs: a fixed seed, and a longer run behind a flag.

`python3 -m pytest tests/fuzz` runs the short suite (fixed seed, well under a minute).
`CI_TOOLS_FUZZ=long python3 -m pytest tests/fuzz` runs many more cases (minutes);
`CI_TOOLS_FUZZ_SEED=N` picks another seed for either (the failing case names its seed).

The classes and their invariants (each module's docstring says them in full):
* inputs (harness.py I1-I7): fuzzed catalogs, runner inventories, records and arguments;
* child output (test_child_output.py C1-C4): a hostile `flox` and `nvidia-smi` on PATH; no
  secret reaches a log, record, report or release; no injected workflow command is obeyed;
  a capability is ASCII X.Y, unknown, or refused;
* markup (test_markup.py M1-M3): Markdown and HTML in record fields render as text in the
  step summary and the release notes; nothing hides the notes' end; install lines name only
  organisations of the grammar;
* hostile API (test_hostile_api.py A1-A5): HTML, wrong shapes, nulls, endless pages, 502s and
  hangs from a server on 127.0.0.1; no traceback, exit 0 or 1, `--until-green` falls back to
  every stack, every command within its budget and a bounded number of requests, no token;
* grammar (test_grammar_eval.py G1-G3): a value the catalog grammar refuses cannot evaluate
  (nix-instantiate against the nixpkgs stand-in), and its accepted neighbour does.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def fuzz_long() -> bool:
    return os.environ.get("CI_TOOLS_FUZZ") == "long"


@pytest.fixture(scope="session")
def fuzz_seed() -> int:
    return int(os.environ.get("CI_TOOLS_FUZZ_SEED", "20261122"))
