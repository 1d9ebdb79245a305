"""The README and the manual in docs/ tell the truth about the command line: the README's command
table is the CLI's list of subcommands, and every flag either shows exists (on the command it
is shown with). The README stays a front page that links every page of the manual, and every
link between them resolves."""

from __future__ import annotations

import argparse
import re

from ci_tools import cli
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {path: path.read_text(encoding="utf-8") for path in sorted(REPO_ROOT.glob("docs/*.md"))}
DOCUMENTS = {REPO_ROOT / "README.md": README, **PAGES}
TEXT = "\n".join(DOCUMENTS.values())
# What the README and docs/ show as code: fenced blocks and `spans`.
CODE = [
    code
    for text in DOCUMENTS.values()
    for code in re.findall(r"```[a-z]*\n(.*?)```", text, re.DOTALL)
    + re.findall(r"(?<!`)`([^`\n]+)`(?!`)", re.sub(r"```.*?```", "", text, flags=re.DOTALL))
]
# "ci-tools CMD ..." in code, up to the end of its line or a comment.
MENTION = re.compile(r"ci-tools ([a-z][a-z-]*)((?: [^#\n]*)?)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# Flags of other tools the README shows, each with its tool.
OTHER_TOOLS = {
    "--fetch-submodules": "nix-prefetch-github",
    "--rev": "nix-prefetch-github",
    "--unpack": "nix-prefetch-url",
    "--parse": "nix-instantiate",
    "--max-freed": "nix-store",
    "--delete-older-than": "nix-collect-garbage",
    "--offline": "zizmor",
    "--query-gpu": "nvidia-smi",
    "--format": "nvidia-smi",
    "--extra-index-url": "pip",
    "--index-url": "pip",
    "--without-pip": "python3 -m venv",
    "--upgrade": "pip",
    "--no-deps": "pip wheel",
    "--no-build-isolation": "pip wheel",
    "--gc": "nix-store",
    "--generate-binary-cache-key": "nix-store",
    "--key-file": "nix store sign",
    "--to": "nix copy",
    "--from": "nix copy",
    "--negotiate-only": "git fetch",
    "--add": "nix-store",
    "--dump": "nix-store",
    "--recursive": "nix path-info",
    "--type": "nix-hash",
    "--repo": "gh attestation verify",
    "--signer-workflow": "gh attestation verify",
    "--strict": "mypy",
    "--fingerprint-repo": "benchmarks/bench_matrix.py",
    "--torch": "benchmarks/bench_size.py",
    "--cuobjdump": "benchmarks/bench_size.py",
    "--list-elf": "cuobjdump",
    "--hosts": "benchmarks/bench_fleet.py",
    "--runs": "benchmarks/bench_since.py",
    "--baseline": "benchmarks/bench_since.py",
    "--batch": "git cat-file",
    "--gpu-hosts": "benchmarks/bench_fleet.py",
    "--records": "benchmarks/bench_fleet.py",
    "--cache": "benchmarks/bench_fleet.py",
    "--order": "benchmarks/bench_fleet.py",
    "--merged": "benchmarks/bench_fleet.py",
    "--local-repository": "act",
    "--version": "bin/Runner.Listener",
    "--disableupdate": "the Actions runner's config.sh",
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def test_the_command_table_is_the_cli() -> None:
    table = README.split("\n## ", 1)[0]
    listed = re.findall(r"^\| `ci-tools ([a-z][a-z-]*)", table, re.MULTILINE)
    assert len(listed) == len(set(listed)), "a command listed twice"
    assert set(listed) == set(cli.COMMANDS)


def test_every_flag_shown_with_a_command_is_that_commands() -> None:
    commands = _commands()
    wrong = []
    mentions = [m for code in CODE for m in MENTION.finditer(code)]
    assert len(mentions) > 20
    for match in mentions:
        command, rest = match[1], match[2]
        if command not in commands:
            wrong.append(f"ci-tools {command}: no such command")
            continue
        known = _flags(commands[command])
        wrong += [f"ci-tools {command} {flag}" for flag in FLAG.findall(rest) if flag not in known]
    assert not wrong, "the docs show flags the CLI does not have:\n" + "\n".join(wrong)


def test_every_flag_in_the_readme_exists() -> None:
    ours = set().union(*(_flags(p) for p in _commands().values()))
    unknown = sorted(set(FLAG.findall(TEXT)) - ours - set(OTHER_TOOLS))
    assert not unknown, f"flags no ci-tools command (nor a listed tool) has: {unknown}"


def test_ci_runs_the_quick_start_word_for_word() -> None:
    """The two Quick start commands are what `.ci/run` runs, so CI proves them on every push."""
    section = README.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None
    commands = [line for line in block[1].splitlines() if line.strip()]
    assert len(commands) == 2
    assert "venv" in commands[0] and "ci-tools matrix" in commands[0]
    assert "download.pytorch.org/whl/cpu" in commands[1] and "pytest" in commands[1]
    run = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for command in commands:
        assert command in run, f".ci/run does not run the README's {command!r}"


# The README is the front page; the manual is docs/ (the model projects, cibuildwheel and nox,
# keep a short README and their manual in a docs folder).
README_MAX_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", text, flags=re.DOTALL), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_readme_is_a_front_page_linking_every_page() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES
    linked = {target.split("#")[0] for target in LINK.findall(README)}
    assert PAGES, "no docs/ pages"
    missing = [p.name for p in PAGES if f"docs/{p.name}" not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_every_link_between_the_documents_resolves() -> None:
    broken = []
    for path, text in DOCUMENTS.items():
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.DOTALL))
        for target in LINK.findall(prose):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.name}: {target}: no such file")
            elif (
                anchor
                and linked.suffix == ".md"
                and anchor not in _anchors(linked.read_text(encoding="utf-8"))
            ):
                broken.append(f"{path.name}: {target}: no such heading")
    assert not broken, "\n".join(broken)
