"""The stand-in actions refuse what the real ones refuse (sources in tests/act/actions/standin.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.act.harness import STANDIN, git


def action(which: str, tmp: Path, **inputs: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ACT_ARTIFACTS": str(tmp / "store"),
        "GITHUB_WORKSPACE": str(tmp / "ws"),
        "RUNNER_TEMP": str(tmp / "rt"),
        "GITHUB_PATH": str(tmp / "path"),
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
    }
    (tmp / "ws").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(STANDIN), which], env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "a.result.json").write_text("{}")
    (folder / ".hidden").write_text("x")
    return folder


def test_upload_to_an_existing_name_fails_without_overwrite(tmp_path: Path, results: Path) -> None:
    assert action("upload-artifact", tmp_path, name="results-x", path=str(results)).returncode == 0
    again = action("upload-artifact", tmp_path, name="results-x", path=str(results))
    assert again.returncode == 1
    assert "(409) Conflict" in again.stdout
    (results / "a.result.json").write_text('{"v": 2}')
    replaced = action(
        "upload-artifact", tmp_path, name="results-x", path=str(results), overwrite="true"
    )
    assert replaced.returncode == 0
    assert json.loads((tmp_path / "store" / "results-x" / "a.result.json").read_text()) == {"v": 2}
    assert not (tmp_path / "store" / "results-x" / ".hidden").exists()


def test_upload_of_nothing_follows_if_no_files_found(tmp_path: Path) -> None:
    missing = str(tmp_path / "none")
    assert "::warning::" in action("upload-artifact", tmp_path, name="a", path=missing).stdout
    assert (
        action(
            "upload-artifact", tmp_path, name="a", path=missing, if_no_files_found="error"
        ).returncode
        == 1
    )
    assert not (tmp_path / "store" / "a").exists()


def test_download_by_pattern_merged_or_per_artifact_and_by_missing_name(
    tmp_path: Path, results: Path
) -> None:
    for name in ("results-a", "results-b", "planned"):
        assert action("upload-artifact", tmp_path, name=name, path=str(results)).returncode == 0
    merged = tmp_path / "merged"
    action(
        "download-artifact", tmp_path, pattern="results-*", path=str(merged), merge_multiple="true"
    )
    assert sorted(p.name for p in merged.iterdir()) == ["a.result.json"]
    apart = tmp_path / "apart"
    action("download-artifact", tmp_path, pattern="results-*", path=str(apart))
    assert sorted(p.name for p in apart.iterdir()) == ["results-a", "results-b"]
    missing = action("download-artifact", tmp_path, name="nope", path=str(apart))
    assert missing.returncode == 1
    assert "Artifact not found for name: nope" in missing.stdout


def test_checkout_of_a_commit_a_branch_and_all_history(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    git(
        src, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "1"
    )
    first = git(src, "rev-parse", "HEAD")
    git(
        src, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "2"
    )
    tip = git(src, "rev-parse", "HEAD")
    env = {"ACT_STANDIN_ORIGIN": str(src), "EVENT_REF": "refs/heads/main", "EVENT_SHA": first}
    os.environ.update(env)
    try:
        assert action("checkout", tmp_path).returncode == 0
        assert git(tmp_path / "ws", "rev-parse", "HEAD") == first  # the event's commit
        assert git(tmp_path / "ws", "rev-parse", "--abbrev-ref", "HEAD") == "main"
        assert action("checkout", tmp_path, ref="main").returncode == 0
        assert git(tmp_path / "ws", "rev-parse", "HEAD") == tip  # the branch's tip
        assert git(tmp_path / "ws", "rev-list", "--count", "HEAD") == "1"  # depth 1
        assert action("checkout", tmp_path, ref=first, fetch_depth="0").returncode == 0
        assert git(tmp_path / "ws", "rev-parse", "HEAD") == first
        assert git(tmp_path / "ws", "rev-parse", "origin/main") == tip  # all branches
    finally:
        for key in env:
            del os.environ[key]


def test_setup_python_refuses_a_version_this_machine_lacks(tmp_path: Path) -> None:
    (tmp_path / "rt").mkdir()
    wrong = action("setup-python", tmp_path, python_version="2.7")
    assert wrong.returncode == 1
    assert "Python 2.7 requested" in wrong.stdout
    have = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert action("setup-python", tmp_path, python_version=have).returncode == 0
    assert (tmp_path / "path").read_text().strip().endswith("setup-python/bin")


def _pages_env(tmp: Path) -> dict[str, str]:
    (tmp / "rt").mkdir(exist_ok=True)
    return {
        "GITHUB_RUN_ID": "1",
        "GITHUB_REPOSITORY": "acme/torch-builds",
        "GITHUB_SHA": "0" * 40,
        "GITHUB_ACTOR": "ci",
        "GITHUB_ACTION": "deployment",
        "GITHUB_OUTPUT": str(tmp / "rt" / "output"),
        "ACT_PAGES": str(tmp / "pages"),
    }


def deploy(tmp: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **_pages_env(tmp), "ACT_ARTIFACTS": str(tmp / "store")}
    env.update({"INPUT_TOKEN": "ghs_x", "INPUT_ARTIFACT_NAME": "github-pages", **extra})
    return subprocess.run(
        [sys.executable, str(STANDIN), "deploy-pages"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _site_artifact(tmp: Path, link: bool = False) -> None:
    site = tmp / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>page</p>")
    if link:
        (site / "other.html").symlink_to(site / "index.html")
    artifact = tmp / "store" / "github-pages"
    artifact.mkdir(parents=True)
    # What upload-pages-artifact's own tar makes, without --dereference when `link` asks for one.
    flags = [] if link else ["--dereference", "--hard-dereference"]
    subprocess.run(
        ["tar", *flags, "--directory", str(site), "-cf", str(artifact / "artifact.tar"), "."],
        check=True,
    )


def test_deploy_pages_deploys_the_site_and_names_its_url(tmp_path: Path) -> None:
    _site_artifact(tmp_path)
    done = deploy(tmp_path)
    assert done.returncode == 0, done.stdout
    assert (tmp_path / "pages" / "index.html").read_text() == "<p>page</p>"
    assert (tmp_path / "rt" / "output").read_text() == (
        "page_url=https://acme.github.io/torch-builds/\n"
    )


def test_deploy_pages_refuses_what_pages_refuses(tmp_path: Path) -> None:
    missing = deploy(tmp_path)
    assert missing.returncode == 1
    assert 'No artifacts named "github-pages" were found for this workflow run' in missing.stdout
    _site_artifact(tmp_path, link=True)
    linked = deploy(tmp_path)
    assert linked.returncode == 1
    assert "only files and folders" in linked.stdout
    (tmp_path / "store" / "github-pages" / "artifact.tar").write_text("not a tar")
    assert "a single tar file" in deploy(tmp_path).stdout
    no_token = deploy(tmp_path, INPUT_TOKEN="")
    assert "Input required and not supplied: token" in no_token.stdout


def test_deploy_pages_needs_the_run_variables(tmp_path: Path) -> None:
    _site_artifact(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTION"}
    env.update({k: v for k, v in _pages_env(tmp_path).items() if k != "GITHUB_ACTION"})
    env.update({"ACT_ARTIFACTS": str(tmp_path / "store"), "INPUT_TOKEN": "t"})
    done = subprocess.run(
        [sys.executable, str(STANDIN), "deploy-pages"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "GITHUB_ACTION is undefined. Cannot continue." in done.stdout


HEX = "fc718294e87459ba96fb81689e45d24d49ea03559854cd764581ec868164ad6e"


def _attest(
    tmp_path: Path, text: str, published: list[str], **inputs: str
) -> subprocess.CompletedProcess[str]:
    """The attest stand-in over a subjects file, the fake FloxHub holding `published`."""
    state = tmp_path / "hub"
    state.mkdir(exist_ok=True)
    hub = {"acme": {name: [{"rev": "r"}] for name in published}}
    (state / "floxhub.json").write_text(json.dumps(hub))
    subjects = tmp_path / "subjects-0.txt"
    subjects.write_text(text)
    out = tmp_path / "output"
    out.touch()
    env_inputs = {"subject_checksums": str(subjects), **inputs}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLOX_DOUBLE_STATE", str(state))
        patch.setenv("GITHUB_OUTPUT", str(out))
        return action("attest", tmp_path, **env_inputs)


def test_attest_takes_the_published_variants_in_shasum_format(tmp_path: Path) -> None:
    done = _attest(tmp_path, f"{HEX}  pytorch-a\n{HEX}  pytorch-b\n", ["pytorch-a", "pytorch-b"])
    assert done.returncode == 0, done.stdout
    assert f"attest stand-in: subject {HEX}  pytorch-a" in done.stdout


@pytest.mark.parametrize(
    ("text", "published", "said"),
    [
        (f"{HEX} pytorch-a\n", ["pytorch-a"], "not `<sha256 hex>  <name>`"),
        (f"{HEX[:-1]}  pytorch-a\n", ["pytorch-a"], "not `<sha256 hex>  <name>`"),
        (f"{HEX}  pytorch-a\n", ["pytorch-a", "pytorch-b"], "are not the published"),
        (f"{HEX}  pytorch-a\n{HEX}  pytorch-c\n", ["pytorch-a"], "are not the published"),
        (f"{HEX}  pytorch-a\n{HEX}  pytorch-a\n", ["pytorch-a"], "2 subjects (1 names)"),
        ("", [], "0 subjects"),
        ("".join(f"{HEX}  v{i}\n" for i in range(1025)), [], "1025 subjects"),
    ],
)
def test_attest_refuses_a_malformed_or_wrong_subjects_file(
    tmp_path: Path, text: str, published: list[str], said: str
) -> None:
    done = _attest(tmp_path, text, published)
    assert done.returncode == 1 and said in done.stdout, done.stdout


def test_attest_takes_one_subject_input_and_no_predicate_with_an_sbom(tmp_path: Path) -> None:
    two = _attest(tmp_path, f"{HEX}  a\n", ["a"], subject_path="x")
    assert two.returncode == 1 and "at most one of" in two.stdout
    both = _attest(tmp_path, f"{HEX}  a\n", ["a"], sbom_path="s.json", predicate="{}")
    assert both.returncode == 1 and '"sbom-path" cannot be used' in both.stdout
