"""The stand-in actions of the act scenarios: checkout, setup-python, upload-artifact,
download-artifact, deploy-pages and attest (upload-pages-artifact is the real action's own steps over
the upload-artifact stand-in), doing what the workflows rely on, offline, against folders the
test owns.

Each composite action under tests/act/actions/ runs `python3 "$ACT_STANDIN" <action>` with its
inputs in INPUT_* variables. The harness sets ACT_STANDIN, ACT_STANDIN_ORIGIN (the scenario's
origin repository), ACT_ARTIFACTS (the run's artifact store), ACT_PAGES (where deploy-pages
puts the site) and ACT_PYTHON_VENVS.

Rules modelled, with their sources:
* upload-artifact (actions/upload-artifact v7.0.0, action.yml and README "Breaking Changes" of
  v4): an artifact name is unique within a run; uploading to an existing name fails (the
  service answers 409 Conflict) unless `overwrite: true`, which deletes the old one first.
  `if-no-files-found`: warn (default), error or ignore. Hidden files are left out unless
  `include-hidden-files: true` (v4.4.0). A directory path uploads its contents.
* download-artifact (actions/download-artifact v8.0.1, action.yml and README "Download All
  Artifacts"): `name` downloads one artifact into `path` and fails when it does not exist;
  otherwise every artifact matching `pattern` (all without one) goes to `path/<name>/`, or
  straight into `path` with `merge-multiple: true`; no match downloads nothing.
* checkout (actions/checkout v7.0.1, action.yml; src/ref-helper.ts): `ref` empty means the
  event's ref and sha; a branch name checks out that branch's tip as a local branch; a commit
  SHA is a detached HEAD; `fetch-depth` 1 by default, 0 for all history and tags.
* setup-python (actions/setup-python v7.0.0): the requested version must be the machine's
  (no download here); its interpreter comes first on PATH.
* deploy-pages (actions/deploy-pages v5.0.0, src/internal/context.js, api-client.js,
  deployment.js; actions/upload-pages-artifact v5.0.0 README "Artifact validation"): the run's
  variables must be set ("X is undefined. Cannot continue."); exactly one artifact of
  `artifact_name` in the run ("No artifacts named ... were found for this workflow run"); it
  holds one tar file, under 10 GB, of files and folders only (no symbolic or hard links). The
  site is unpacked into ACT_PAGES and `page_url` is https://OWNER.github.io/REPO/. Not modelled:
  the OIDC token (act mints none): tests/workflows/test_workflows.py checks statically that the
  deploying job asks for `pages: write` and `id-token: write` and nothing else.
* attest (actions/attest v4.2.2, action.yml and README "Identify Subjects with Checksums File",
  "Subject Limits"): at most one subject input; `sbom-path` not with a predicate; a checksums
  file of `<hex>  <name>` lines, 1 to 1,024 subjects. Beyond the action: the subjects are
  every variant the fake FloxHub holds (FLOX_DOUBLE_STATE), and only those. Not modelled:
  signing (no OIDC token under act); tests/workflows/test_attest_job.py checks the job's
  permissions statically.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
from pathlib import Path

SHA = re.compile(r"[0-9a-f]{40}")


def fail(message: str) -> None:
    print(f"::error::{message}")
    sys.exit(1)


def inp(name: str, default: str = "") -> str:
    return os.environ.get(f"INPUT_{name}", default).strip()


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def checkout() -> None:
    origin = os.environ["ACT_STANDIN_ORIGIN"]
    target = Path(os.environ["GITHUB_WORKSPACE"]) / inp("PATH")
    depth = int(inp("FETCH_DEPTH", "1") or "1")
    ref = inp("REF") or os.environ.get("EVENT_REF", "")
    sha = os.environ.get("EVENT_SHA", "") if not inp("REF") else ""
    # The real action cleans the folder of anything not from the repository.
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    git("init", "-q", cwd=target)
    git("remote", "add", "origin", origin, cwd=target)
    deepen = [] if depth == 0 else [f"--depth={depth}"]
    tags = ["--tags"] if depth == 0 else ["--no-tags"]
    if depth == 0:
        # All history: every branch as origin/<branch> and every tag (src/git-source-provider.ts).
        git("fetch", "-q", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*", cwd=target)
    if SHA.fullmatch(ref):
        if depth != 0:
            git("fetch", "-q", *deepen, *tags, "origin", ref, cwd=target)
        git("checkout", "-q", "--detach", ref, cwd=target)
    else:
        branch = ref.removeprefix("refs/heads/")
        if branch.startswith("refs/"):
            # A pull request's merge ref: the stand-in checks out the event's commit.
            if depth != 0:
                git("fetch", "-q", *deepen, *tags, "origin", sha, cwd=target)
            git("checkout", "-q", "--detach", sha, cwd=target)
        else:
            remote = f"refs/remotes/origin/{branch}"
            # An event's sha pins the commit (fetched as the branch's remote ref); a named
            # ref takes the branch's tip.
            if depth != 0:
                source = sha or f"refs/heads/{branch}"
                git("fetch", "-q", *deepen, *tags, "origin", f"+{source}:{remote}", cwd=target)
            git("checkout", "-q", "-B", branch, sha or remote, cwd=target)
    print(f"checked out {ref or sha} at depth {depth or 'all'} into {target}")


def setup_python() -> None:
    wanted = inp("PYTHON_VERSION")
    have = f"{sys.version_info.major}.{sys.version_info.minor}"
    if wanted and not (have == wanted or have.startswith(wanted + ".")):
        fail(f"setup-python stand-in: Python {wanted} requested, this machine has {have}")
    home = Path(os.environ["RUNNER_TEMP"]) / "setup-python"
    if not home.exists():
        # The machine's Python with the runners' own packages (pip, setuptools, ci-tools'
        # dependencies: ACT_RUNNER_SITE, tests/act/hooks/python3), so a job's `pip install .`
        # resolves them without installing them again. An act-only speed-up: GitHub's
        # hosted Python has pip alone, and the job's install would fetch the rest.
        venv.EnvBuilder(system_site_packages=True, with_pip=False).create(home)
        site = os.environ.get("ACT_RUNNER_SITE", "")
        if site:
            purelib = sysconfig.get_path("purelib", vars={"base": str(home), "platbase": str(home)})
            Path(purelib, "_act_runner_site.pth").write_text(site + "\n", encoding="utf-8")
    with Path(os.environ["GITHUB_PATH"]).open("a", encoding="utf-8") as handle:
        handle.write(f"{home / 'bin'}\n")
    print(f"Python {have} from {sys.executable} in {home}")


def files_of(path: Path, hidden: bool) -> list[tuple[Path, str]]:
    if path.is_file():
        return [(path, path.name)]
    found = []
    for item in sorted(path.rglob("*")):
        rel = item.relative_to(path)
        if not item.is_file() or (not hidden and any(p.startswith(".") for p in rel.parts)):
            continue
        found.append((item, rel.as_posix()))
    return found


def upload_artifact() -> None:
    store = Path(os.environ["ACT_ARTIFACTS"])
    name = inp("NAME", "artifact")
    if not name or any(c in name for c in '\\/":<>|*?\r\n'):
        fail(f'upload-artifact: the artifact name "{name}" is not valid')
    hidden = inp("INCLUDE_HIDDEN_FILES") == "true"
    files: list[tuple[Path, str]] = []
    for line in inp("PATH").splitlines():
        if line.strip():
            path = Path(os.path.expandvars(line.strip()))
            if path.exists():
                files += files_of(path, hidden)
    if not files:
        mode = inp("IF_NO_FILES_FOUND", "warn")
        message = f"No files were found with the provided path: {inp('PATH')}. No artifacts will be uploaded."
        if mode == "error":
            fail(message)
        print(f"::warning::{message}" if mode == "warn" else message)
        return
    target = store / name
    if target.exists():
        if inp("OVERWRITE") != "true":
            fail(
                "Failed to CreateArtifact: Received non-retryable error: Failed request: "
                f"(409) Conflict: an artifact with this name already exists on the workflow run ({name})"
            )
        shutil.rmtree(target)
    for source, rel in files:
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)
    print(f"Artifact {name} has been successfully uploaded ({len(files)} files)")
    push_hook(name)


def push_hook(name: str) -> None:
    """Scenario hook, not a rule of the action: ACT_HOOK_PUSH="SHA ORIGIN BRANCH" pushes SHA
    to BRANCH of ORIGIN once the artifact ACT_HOOK_PUSH_AFTER is uploaded (a release's plan
    is done, its builds not started: a push to the branch while the release runs)."""
    hook = os.environ.get("ACT_HOOK_PUSH", "").split()
    if len(hook) != 3 or name != os.environ.get("ACT_HOOK_PUSH_AFTER"):
        return
    sha, origin, branch = hook
    source = os.environ["ACT_HOOK_PUSH_FROM"]
    git("push", "-q", "--force", origin, f"{sha}:refs/heads/{branch}", cwd=Path(source))
    Path(os.environ["ACT_HOOK_PUSH_DONE"]).write_text(sha)


def download_artifact() -> None:
    store = Path(os.environ["ACT_ARTIFACTS"])
    path = Path(inp("PATH") or os.environ["GITHUB_WORKSPACE"])
    name = inp("NAME")
    available = sorted(p.name for p in store.iterdir()) if store.is_dir() else []
    if name:
        if name not in available:
            fail(f"Unable to download artifact(s): Artifact not found for name: {name}")
        chosen, merge = [name], True
    else:
        pattern = inp("PATTERN")
        chosen = [a for a in available if not pattern or fnmatch.fnmatchcase(a, pattern)]
        merge = inp("MERGE_MULTIPLE") == "true"
    for artifact in chosen:
        shutil.copytree(store / artifact, path if merge else path / artifact, dirs_exist_ok=True)
    print(f"Total of {len(chosen)} artifact(s) downloaded to {path}")


PAGES_LIMIT = 10 * 1024**3
RUN_VARIABLES = (
    "GITHUB_RUN_ID",
    "GITHUB_REPOSITORY",
    "GITHUB_SHA",
    "GITHUB_ACTOR",
    "GITHUB_ACTION",
)


def deploy_pages() -> None:
    for variable in RUN_VARIABLES:
        if os.environ.get(variable) is None:
            fail(f"{variable} is undefined. Cannot continue.")
    if not inp("TOKEN"):
        fail("Input required and not supplied: token")
    name = inp("ARTIFACT_NAME", "github-pages") or "github-pages"
    artifact = Path(os.environ["ACT_ARTIFACTS"]) / name
    if not artifact.is_dir():
        fail(
            f'No artifacts named "{name}" were found for this workflow run. Ensure artifacts '
            "are uploaded with actions/upload-artifact@v4 or later."
        )
    files = [p for p in artifact.rglob("*") if p.is_file()]
    if len(files) != 1 or not tarfile.is_tarfile(files[0]):
        fail(f'artifact "{name}" must hold a single tar file, not {[p.name for p in files]}')
    if files[0].stat().st_size > PAGES_LIMIT:
        fail(f'artifact "{name}" is over the 10 GB Pages will deploy')
    site = Path(os.environ["ACT_PAGES"])
    with tarfile.open(files[0]) as archive:
        links = [m.name for m in archive.getmembers() if not (m.isfile() or m.isdir())]
        if links:
            fail(f"the Pages artifact may hold only files and folders, not {links[:3]}")
        outside = [m.name for m in archive.getmembers() if m.name.startswith("/") or ".." in
                   Path(m.name).parts]  # fmt: skip
        if outside:
            fail(f"the Pages artifact names paths outside its site: {outside[:3]}")
        if site.exists():
            shutil.rmtree(site)
        # Checked above as the "data" filter would (Debian's 3.11.2 predates `filter=`).
        archive.extractall(site)  # noqa: S202
    owner, _, repo = os.environ["GITHUB_REPOSITORY"].partition("/")
    url = f"https://{owner}.github.io/{repo}/"
    with Path(os.environ["GITHUB_OUTPUT"]).open("a", encoding="utf-8") as handle:
        handle.write(f"page_url={url}\n")
    print(f"Deployed {files[0].name} of {name} to {url} ({site})")


# `<hex digest>  <name>` (or ` *<name>`): the shasum format (actions/attest v4.2.2 README,
# "Identify Subjects with Checksums File": SHA256 or SHA512, hex).
_CHECKSUM_LINE = re.compile(r"([0-9a-f]{64}|[0-9a-f]{128}) [ *](\S.*)")
MAX_SUBJECTS = 1024  # actions/attest README "Subject Limits"


def attest() -> None:
    subjects = [inp(n) for n in ("SUBJECT_PATH", "SUBJECT_DIGEST", "SUBJECT_CHECKSUMS")]
    if sum(bool(s) for s in subjects) > 1:
        fail('attest: at most one of "subject-path", "subject-digest", "subject-checksums"')
    predicates = [inp(n) for n in ("SBOM_PATH", "PREDICATE_TYPE", "PREDICATE", "PREDICATE_PATH")]
    if predicates[0] and any(predicates[1:]):
        fail('attest: "sbom-path" cannot be used together with a predicate input')
    path = Path(inp("SUBJECT_CHECKSUMS"))
    if not inp("SUBJECT_CHECKSUMS") or not path.is_file():
        fail(f"attest stand-in: the workflow attests by subject-checksums; {path} is no file")
    names: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        found = _CHECKSUM_LINE.fullmatch(line)
        if found is None:
            fail(f"attest: {path}:{number}: not `<sha256 hex>  <name>`: {line[:100]!r}")
        names.append(found.group(2))
    if not names or len(names) > MAX_SUBJECTS or len(set(names)) != len(names):
        fail(f"attest: {len(names)} subjects ({len(set(names))} names): 1 to {MAX_SUBJECTS}")
    # What flox publish published: the fake FloxHub's packages (tests/doubles/flox hub.py).
    hub = Path(os.environ["FLOX_DOUBLE_STATE"]) / "floxhub.json"
    state = json.loads(hub.read_text(encoding="utf-8")) if hub.exists() else {}
    published = {name for packages in state.values() for name in packages}
    if set(names) != published:
        fail(f"attest: subjects {sorted(names)} are not the published {sorted(published)}")
    for line in path.read_text(encoding="utf-8").splitlines():
        print(f"attest stand-in: subject {line}")
    with Path(os.environ["GITHUB_OUTPUT"]).open("a", encoding="utf-8") as handle:
        handle.write(f"attestation-id={len(names)}\n")


ACTIONS = {
    "attest": attest,
    "checkout": checkout,
    "setup-python": setup_python,
    "upload-artifact": upload_artifact,
    "download-artifact": download_artifact,
    "deploy-pages": deploy_pages,
}

if __name__ == "__main__":
    ACTIONS[sys.argv[1]]()
