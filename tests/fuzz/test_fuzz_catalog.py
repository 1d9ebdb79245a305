"""Mutated catalogs through `generate --out`, `generate --check` and `matrix` (issue 12).

Mutations run in-process (speed), except a sample run as real subprocesses. The
invariants are those of harness.py; the counts are printed at the end (`-s` shows them).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from . import harness, mutations
from .harness import Tally

pytestmark = pytest.mark.skipif(
    shutil.which("nix-instantiate") is None, reason="nix-instantiate (Debian nix-bin) not found"
)

SHORT, LONG = 80, 1500
SUBPROCESS_SAMPLE = 6


def _sandbox(root: Path) -> tuple[Path, Path]:
    """A checkout to fuzz in: catalog, runners; `out/` the baseline."""
    work = root / "work"
    work.mkdir()
    shutil.copy(harness.REPO_ROOT / "catalog.yaml", work / "catalog.yaml")
    shutil.copy(harness.REPO_ROOT / "runners.yaml", work / "runners.yaml")
    out = work / "out"
    first = harness.run_inprocess(["generate", "--branch", "main", "--out", "out"], work)
    assert first.code == 0, first.stderr
    return work, out


def _restore(out: Path, baseline: dict[str, bytes]) -> None:
    shutil.rmtree(out)
    for key, data in baseline.items():
        if key.endswith("/"):
            (out / key).mkdir(parents=True, exist_ok=True)
        elif not data.startswith(b"->"):
            (out / key).parent.mkdir(parents=True, exist_ok=True)
            (out / key).write_bytes(data)


def test_mutated_catalogs(
    tmp_path: Path, fuzz_seed: int, fuzz_long: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(fuzz_seed)
    work, out = _sandbox(tmp_path)
    out.mkdir(exist_ok=True)
    baseline = harness.snapshot(out)
    original = (work / "catalog.yaml").read_text(encoding="utf-8")
    tally = Tally()
    trees: list[tuple[Path, list[str]]] = []  # accepted renderings that differ, to check
    seen: set[int] = set()
    keep = tmp_path / "rendered"
    keep.mkdir()
    count = LONG if fuzz_long else SHORT
    cases = list(mutations.mutate_yaml(original, rng, count))
    sample = set(rng.sample(range(len(cases)), SUBPROCESS_SAMPLE))
    home = tmp_path / "home"
    home.mkdir()
    for index, case in enumerate(cases):
        tally.cases += 1
        label = f"seed {fuzz_seed} case {index}: {case.label}"
        (work / "catalog.yaml").write_text(case.text, encoding="utf-8", errors="surrogatepass")
        outside = harness.snapshot(work, skip=[out])
        run = harness.run_subprocess if index in sample else None

        def call(*argv: str, run: object = run) -> harness.Run:
            if run is not None:
                return harness.run_subprocess(argv, work, home)
            return harness.run_inprocess(argv, work)

        gen = call("generate", "--catalog", "catalog.yaml", "--branch", "main", "--out", "out")
        harness.check_run(gen, label=label, tally=tally, bad_input=None, allowed=frozenset({0, 2}))
        after = harness.snapshot(out)
        if gen.code != 0:
            harness.check_unchanged(baseline, after, f"[{label}] out/ after exit {gen.code}")
            tally.invariants["I4 output unchanged on failure"] += 1
        elif after != baseline and hash(frozenset(after.items())) not in seen:
            seen.add(hash(frozenset(after.items())))
            changed = sorted(k for k in after if after[k] != baseline.get(k))
            # Laid out as a checkout: recipes import ../../nix/ (the shared builders).
            copy = keep / f"case-{index}" / ".flox" / "pkgs"
            shutil.copytree(out, copy)
            (keep / f"case-{index}" / "nix").symlink_to(harness.REPO_ROOT / "nix")
            trees.append((copy, changed))
        check = call(
            "generate", "--catalog", "catalog.yaml", "--branch", "main", "--out", "out", "--check"
        )
        harness.check_run(check, label=label, tally=tally, bad_input=gen.code == 2)
        if gen.code == 0:
            assert check.code == 0, f"[{label}] --check fails right after generate:\n{check.stderr}"
        harness.check_unchanged(after, harness.snapshot(out), f"[{label}] out/ after --check")
        tally.invariants["I4 output unchanged by --check"] += 1
        matrix = call("matrix", "--catalog", "catalog.yaml", "--branch", "main")
        harness.check_run(
            matrix, label=label, tally=tally, bad_input=gen.code == 2, allowed=frozenset({0, 2})
        )
        # The same loader decides for all three commands.
        assert (matrix.code == 0) == (gen.code == 0), (
            f"[{label}] matrix {matrix.code}, generate {gen.code}"
        )
        harness.check_unchanged(
            outside, harness.snapshot(work, skip=[out]), f"[{label}] outside out/"
        )
        tally.invariants["I7 nothing outside out/"] += 1
        if after != baseline:
            _restore(out, baseline)
    # I5 and I6 once over every distinct rendering an accepted mutation produced.
    files = [tree / key for tree, changed in trees for key in changed if key.endswith(".nix")]
    harness.nix_parse(files, tmp_path / "nix")
    tally.invariants["I5 rendered files parse"] += len(files)
    recipes = []
    for tree, changed in trees:
        names = [k for k in changed if "/" not in k and k.endswith(".nix")]
        if any("/" in k for k in changed):  # a shared builder changed: every kind of recipe
            names += sorted(p.name for p in tree.glob("*.nix"))[::15]
        recipes += [tree / name for name in dict.fromkeys(names) if (tree / name).exists()]
    snippets = harness.shell_snippets(recipes, tmp_path / "nix") if recipes else {}
    harness.run_snippets(snippets, tmp_path / "bash")
    tally.invariants["I6 no payload runs (recipes run)"] += len(snippets)
    with capsys.disabled():
        print(f"\nfuzz catalog: {tally.summary()}; {len(trees)} accepted renderings")
    assert 0 < tally.exit_codes["generate=0"] < tally.cases, "the corpus must hold good and bad"
