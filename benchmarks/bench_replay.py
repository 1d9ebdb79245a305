"""Replay a build repository's history through `ci-tools matrix --since` (issue 10, item 6).

    python benchmarks/bench_replay.py REPO [BRANCH ...] [--commits N]

For each branch (default: every branch of REPO, local or `origin/`), the last N (60)
first-parent commits C, each against its first parent P: `ci-tools matrix --branch B --group
none --since P` runs, as a subprocess, in a worktree of REPO checked out at C (detached, as
a workflow checks out). What it schedules is compared with a ground truth computed here,
without ci_tools' code:

  A recipe (`.flox/pkgs/<name>.nix` or `.flox/pkgs/<name>/default.nix` at C) must be rebuilt
  when it is new, or when its own Nix as Nix parses it (`nix-instantiate --parse`, the
  extraction folder's path masked), or any file it references, differs between P and C.
  References are the absolute paths the parser prints (Nix resolves every path literal
  against the file's folder), followed transitively through referenced `.nix` files; a
  referenced folder counts with every file in it; other files compare by bytes; a reference
  to nothing compares as absent. `.flox/env/manifest.toml` and `manifest.lock` count for
  every recipe (flox builds the recipes in that environment). Both commits are extracted
  with `git archive`; the parses are one `nix-instantiate` per commit over all its `.nix`
  files.

Printed: precision and recall over (commit, recipe) pairs; how many commits the tool refused
(exit 2: a recipe name outside the grammar, an unknown ISA ...; each is replayed again with
the `--ignore` names its message offers, and the ignored recipes leave that commit's truth); docs-only commits (no file under `.flox/` or `nix/` changed)
that scheduled nothing; build hours scheduled against building every variant of every commit
(2 h a PyTorch variant, 0.5 h any other package). It exits 1 if the tool ever fails otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent
PKGS = ".flox/pkgs"
ENV_FILES = (".flox/env/manifest.toml", ".flox/env/manifest.lock")
HOURS_BASE = 2.0
HOURS_DEPENDENT = 0.5
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def extract(repo: Path, commit: str, into: Path) -> None:
    archive = into.with_suffix(".tar")
    subprocess.run(["git", "archive", "-o", str(archive), commit], cwd=repo, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()


def recipes(root: Path) -> dict[str, Path]:
    pkgs = root / PKGS
    out: dict[str, Path] = {}
    if not pkgs.is_dir():
        return out
    for entry in pkgs.iterdir():
        if entry.is_file() and entry.suffix == ".nix":
            out[entry.stem] = entry
        elif entry.is_dir() and (entry / "default.nix").is_file():
            out[entry.name] = entry / "default.nix"
    return out


_PARSES: dict[tuple[str, str], str] = {}


def parse_all(root: Path) -> dict[Path, str]:
    """Every .nix file's parse, path-masked; a file Nix refuses keeps its bytes as text.

    One `nix-instantiate` per distinct (path, content), never a batch: Nix 2.8 prints
    attributes and formals in symbol-table order, which earlier files of a batch change.
    A file parsed alone prints the same each time, so equal files compare equal.
    """
    files = sorted(p for p in root.rglob("*.nix") if p.is_file())
    out: dict[Path, str] = {}
    for path in files:
        rel = str(path.relative_to(root))
        data = path.read_bytes()
        key = (rel, hashlib.sha256(data).hexdigest())
        if key not in _PARSES:
            one = subprocess.run(
                ["nix-instantiate", "--parse", str(path)], capture_output=True, text=True
            )
            text = one.stdout if one.returncode == 0 else "RAW " + data.decode("latin-1")
            _PARSES[key] = text.replace(str(root), "<root>")
        out[path] = _PARSES[key].replace("<root>", str(root))
    return out


@dataclass
class Side:
    root: Path
    parses: dict[Path, str]

    def key(self, path: Path) -> str:
        """What a file is, for comparison: its masked parse, bytes, or absence."""
        if path.suffix == ".nix" and path in self.parses:
            return self.parses[path].replace(str(self.root), "<root>")
        if path.is_file():
            return "BYTES " + path.read_bytes().hex()
        return "ABSENT"

    def references(self, path: Path) -> list[Path]:
        text = self.parses.get(path)
        if text is None or text.startswith("RAW "):
            return []
        bare = _STRING.sub('""', text)
        prefix = str(self.root) + "/"
        out = []
        for token in re.findall(r"(?<![\w.'-])(/[A-Za-z0-9._+\-/]+)", bare):
            if token.startswith(prefix):
                out.append(Path(token.rstrip("/")))
        return out

    def closure(self, start: Path) -> dict[str, str]:
        """Relative path -> key, for the recipe and everything it references."""
        seen: dict[str, str] = {}
        todo = [start]
        while todo:
            path = todo.pop()
            rel = os.path.relpath(path, self.root)
            if rel in seen:
                continue
            if path.is_dir():
                seen[rel] = "DIR"
                todo.extend(p for p in path.rglob("*") if p.is_file())
                continue
            seen[rel] = self.key(path)
            todo.extend(self.references(path))
        return seen


def truth(repo: Path, parent: str, commit: str, work: Path) -> tuple[set[str], set[str]]:
    """(recipes to rebuild at `commit`, every recipe at `commit`)."""
    sides = []
    for label, rev in (("p", parent), ("c", commit)):
        root = work / label
        extract(repo, rev, root)
        sides.append(Side(root, parse_all(root)))
    before, after = sides
    old = recipes(before.root)
    new = recipes(after.root)
    env_changed = any(before.key(before.root / f) != after.key(after.root / f) for f in ENV_FILES)
    changed: set[str] = set()
    for name, path in new.items():
        if name not in old or env_changed:
            changed.add(name)
            continue
        rel = path.relative_to(after.root)
        a = after.closure(path)
        b = before.closure(before.root / rel)
        if a != b:
            changed.add(name)
    return changed, set(new)


@dataclass
class Totals:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    commits: int = 0
    refused: int = 0
    refused_truth: int = 0
    docs_only: int = 0
    docs_only_zero: int = 0
    hours: float = 0.0
    hours_all: float = 0.0
    misses: list[str] = field(default_factory=list)
    spares: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)


def hours(names: set[str]) -> float:
    return sum(HOURS_BASE if n.startswith("pytorch-") else HOURS_DEPENDENT for n in names)


def tool(worktree: Path, branch: str, parent: str, ignore: list[str]) -> tuple[int, set[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(TOOL)
    argv = ["matrix", "--branch", branch, "--group", "none", "--since", parent]
    argv += [f"--ignore={name}" for name in ignore]
    done = subprocess.run(
        [sys.executable, "-m", "ci_tools", *argv],
        cwd=worktree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return done.returncode, set(), done.stderr
    rows = json.loads(done.stdout)["include"]
    return 0, {p for row in rows for p in row["packages"]}, done.stderr


def branches(repo: Path, wanted: list[str]) -> list[tuple[str, str]]:
    """(name, rev) per branch; a name may be local or under origin/."""
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes/origin")
    known: dict[str, str] = {}
    for ref in refs.split():
        name = ref.removeprefix("refs/heads/").removeprefix("refs/remotes/origin/")
        if name != "HEAD":
            known.setdefault(name, ref)
    names = wanted or sorted(known)
    missing = [n for n in names if n not in known]
    if missing:
        sys.exit(f"bench_replay: no branch {', '.join(missing)} in {repo}")
    return [(n, known[n]) for n in names]


def replay(repo: Path, branch: str, rev: str, count: int, totals: Totals) -> None:
    commits = git(repo, "rev-list", "--first-parent", f"--max-count={count}", rev).split()
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        worktree = Path(tmp) / "wt"
        git(repo, "worktree", "add", "-q", "--detach", str(worktree), commits[0])
        try:
            for commit in commits:
                parents = git(repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
                if not parents:
                    continue
                parent = parents[0]
                git(worktree, "checkout", "-q", "--detach", commit)
                work = Path(tmp) / commit
                work.mkdir()
                want, every = truth(repo, parent, commit, work)
                paths = git(repo, "diff", "--name-only", parent, commit).split("\n")
                docs_only = not any(p.startswith((".flox/", "nix/")) for p in paths if p)
                code, got, stderr = tool(worktree, branch, parent, [])
                totals.commits += 1
                label = f"{branch} {commit[:10]}"
                if code == 2:
                    # Refused, naming each file: replay it as the maintainer would go on,
                    # with the --ignore each message offers; those recipes leave the truth.
                    totals.refused += 1
                    totals.refused_truth += len(want)
                    ignore = sorted(set(re.findall(r"or pass --ignore (\S+)$", stderr, re.M)))
                    totals.refusals.append(f"{label}: --ignore {' '.join(ignore)}")
                    code, got, stderr = tool(worktree, branch, parent, ignore)
                    want -= set(ignore)
                    every -= set(ignore)
                totals.hours_all += hours(every)
                if code != 0:
                    sys.exit(f"bench_replay: the tool failed at {label}:\n{stderr}")
                totals.hours += hours(got)
                totals.tp += len(got & want)
                totals.fp += len(got - want)
                totals.fn += len(want - got)
                totals.misses += [f"{label} {n}" for n in sorted(want - got)]
                totals.spares += [f"{label} {n}" for n in sorted(got - want)]
                if docs_only:
                    totals.docs_only += 1
                    totals.docs_only_zero += not got
        finally:
            git(repo, "worktree", "remove", "--force", str(worktree))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("branches", nargs="*")
    parser.add_argument("--commits", type=int, default=60)
    args = parser.parse_args()
    totals = Totals()
    for name, rev in branches(args.repo, args.branches):
        before = totals.commits
        replay(args.repo, name, rev, args.commits, totals)
        print(f"{name}: {totals.commits - before} commits replayed", flush=True)
    precision = totals.tp / (totals.tp + totals.fp) if totals.tp + totals.fp else 1.0
    recall = totals.tp / (totals.tp + totals.fn) if totals.tp + totals.fn else 1.0
    print(
        f"replays: {totals.commits}; refused (exit 2, each file named): {totals.refused}, "
        f"holding {totals.refused_truth} truth rebuilds; replayed again with the --ignore "
        "names their messages offer (the ignored recipes left out of the truth)"
    )
    print(
        f"precision: {precision:.3f}  recall: {recall:.3f}  "
        f"(true {totals.tp}, spare {totals.fp}, missed {totals.fn})"
    )
    print(f"docs-only commits scheduling 0: {totals.docs_only_zero}/{totals.docs_only}")
    saved = 1 - totals.hours / totals.hours_all if totals.hours_all else 0.0
    print(
        f"build hours: {totals.hours:.1f} scheduled vs {totals.hours_all:.1f} building "
        f"everything ({saved:.1%} saved)"
    )
    for line in totals.misses[:20]:
        print(f"  missed: {line}")
    for line in totals.spares[:20]:
        print(f"  spare: {line}")
    for line in sorted(set(r.split(": ", 1)[1] for r in totals.refusals)):
        count = sum(r.endswith(line) for r in totals.refusals)
        print(f"  refused {count} commits, replayed with {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
