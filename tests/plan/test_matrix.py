"""The pure matrix core: stacks, selection, names, placement per entry, sharding."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ci_tools.base.errors import InputError, SourceError
from ci_tools.catalog.model import Catalog, Kind, Platform
from ci_tools.catalog.variants import expand
from ci_tools.plan import matrix, sharding
from ci_tools.plan.binarycache import BinaryCache
from ci_tools.plan.matrix import Group, Selection, Target
from ci_tools.plan.runners import (
    Inventory,
    Pool,
    default_inventory,
    load_inventory,
)


@pytest.fixture(scope="module")
def shipped_inventory(repo_root: Path) -> Inventory:
    return load_inventory(repo_root / "runners.yaml", "runners.yaml")


def targets(catalog: Catalog, branch: str) -> list[Target]:
    return [matrix.from_variant(v) for v in expand(catalog, branch)]


def plan(
    catalog: Catalog,
    inventory: Inventory,
    branch: str = "main",
    group: Group = Group.STACK,
    **selection: object,
) -> tuple[matrix.Entry, ...]:
    return matrix.plan(
        targets(catalog, branch),
        Selection(**selection),  # type: ignore[arg-type]
        inventory,
        branch=branch,
        group=group,
    )


def test_main_has_45_stacks_and_89_packages(catalog: Catalog, shipped_inventory: Inventory) -> None:
    stacks = plan(catalog, shipped_inventory)
    per_package = plan(catalog, shipped_inventory, group=Group.NONE)
    assert len(stacks) == 45
    assert len(per_package) == 89
    assert sum(len(e.packages) for e in stacks) == 89
    assert sorted(p for e in stacks for p in e.packages) == sorted(
        e.packages[0] for e in per_package
    )


def test_stack_builds_pytorch_before_torchvision(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    (entry,) = plan(catalog, shipped_inventory, select=("*-sm90-avx512",))
    assert entry.name == "py313-sm90-avx512"
    assert entry.packages == (
        "pytorch-python313-cuda12_8-sm90-avx512",
        "torchvision-python313-cuda12_8-sm90-avx512",
    )
    assert entry.to_json() == {
        "name": "py313-sm90-avx512",
        "branch": "main",
        "packages": list(entry.packages),
        "platform": "x86_64-linux",
        # The shipped inventory names no cache to carry a pool's build to the GPU host: the
        # GPU host builds and tests it.
        "runs_on": ["self-hosted", "Linux", "X64", "gpu-sm90"],
        "timeout_minutes": 360,
        "test": "gpu",
        "test_reason": "",
        "test_runs_on": ["self-hosted", "Linux", "X64", "gpu-sm90"],
        "test_timeout_minutes": 360,
    }


def test_entry_names_are_short_unique_and_prefixed_per_package(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    for branch in catalog.branches:
        for group in Group:
            names = [e.name for e in plan(catalog, shipped_inventory, branch, group)]
            assert len(names) == len(set(names))
            assert all(len(n) <= 40 for n in names)
    per_package = {e.name for e in plan(catalog, shipped_inventory, group=Group.NONE)}
    assert {"pytorch-py313-cpu-avx2", "torchvision-py313-sm90-avx512"} <= per_package
    assert "pytorch-py313-darwin-mps" in per_package


def test_cuda_13_torchvision_only_joins_its_stacks(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    entries = plan(catalog, shipped_inventory, "cuda-13_0")
    assert len(entries) == 60
    with_vision = {e.name: e.packages for e in entries if len(e.packages) == 2}
    assert set(with_vision) == {
        "py313-sm110-armv8_2",
        "py313-sm110-armv9",
        "py313-sm121-armv8_2",
        "py313-sm121-armv9",
    }
    assert all(p[1].startswith("torchvision-") for p in with_vision.values())


def test_package_selection_keeps_the_base_in_stacks_only(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    stacks = plan(catalog, shipped_inventory, packages=("torchvision",))
    assert len(stacks) == 44  # darwin-mps has no TorchVision
    assert all(e.packages[0].startswith("pytorch-") for e in stacks)
    assert all(len(e.packages) == 2 for e in stacks)
    alone = plan(catalog, shipped_inventory, group=Group.NONE, packages=("torchvision",))
    assert len(alone) == 44
    assert all(e.packages[0].startswith("torchvision-") for e in alone)


def test_select_skip_and_platform(catalog: Catalog, shipped_inventory: Inventory) -> None:
    arm = plan(catalog, shipped_inventory, platforms=(Platform.AARCH64_LINUX,))
    assert {e.platform for e in arm} == {Platform.AARCH64_LINUX}
    assert len(arm) == 14  # cpu x2 + six SMs x2
    sm90 = plan(catalog, shipped_inventory, select=("*-sm90-*",), skip=("*-armv*",))
    assert [e.name for e in sm90] == [
        "py313-sm90-avx2",
        "py313-sm90-avx512",
        "py313-sm90-avx512bf16",
        "py313-sm90-avx512vnni",
    ]
    both = plan(catalog, shipped_inventory, select=("*-cpu-avx2", "*-darwin-mps"))
    assert [e.name for e in both] == ["py313-cpu-avx2", "py313-darwin-mps"]


def test_selecting_only_the_dependent_still_builds_its_base(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    (entry,) = plan(catalog, shipped_inventory, select=("torchvision-*-cpu-avx2",))
    assert entry.packages == ("pytorch-python313-cpu-avx2", "torchvision-python313-cpu-avx2")
    (entry,) = plan(catalog, shipped_inventory, select=("pytorch-*-cpu-avx2",))
    assert entry.packages == ("pytorch-python313-cpu-avx2",)


def test_nothing_matched_is_an_empty_matrix(catalog: Catalog, shipped_inventory: Inventory) -> None:
    assert plan(catalog, shipped_inventory, select=("nothing-*",)) == ()
    assert json.loads(matrix.matrix_text([])) == {"include": []}


def test_affected_keeps_stacks_with_any_changed_variant(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    changed = frozenset(
        {"torchvision-python313-cuda12_8-sm80-armv9", "pytorch-python313-darwin-mps"}
    )
    stacks = plan(catalog, shipped_inventory, affected=changed)
    assert [e.name for e in stacks] == ["py313-sm80-armv9", "py313-darwin-mps"]
    assert stacks[0].packages[0] == "pytorch-python313-cuda12_8-sm80-armv9"
    alone = plan(catalog, shipped_inventory, group=Group.NONE, affected=changed)
    assert sorted(e.packages[0] for e in alone) == sorted(changed)
    assert plan(catalog, shipped_inventory, affected=frozenset()) == ()


def test_test_scope_follows_the_inventory(catalog: Catalog, shipped_inventory: Inventory) -> None:
    by_name = {e.name: e.placement for e in plan(catalog, shipped_inventory)}
    assert by_name["py313-sm90-avx512bf16"].test.value == "gpu"
    assert by_name["py313-sm80-avx512"].test.value == "cpu"
    assert "no x86_64-linux test runner has an sm80 GPU" in by_name["py313-sm80-avx512"].test_reason
    # The pool's CPUs lack avx512_bf16, the GPU host's have it: tested there.
    bf16 = by_name["py313-cpu-avx512bf16"]
    assert (bf16.test.value, bf16.test_reason) == ("cpu", "")
    assert bf16.test_runs_on[-1] == "gpu-sm90" and bf16.runs_on[-1] == "gpu-sm90"
    assert by_name["py313-darwin-mps"].test.value == "gpu"
    assert by_name["py313-darwin-mps"].runs_on == (
        "self-hosted",
        "macOS",
        "ARM64",
        "builder-darwin",
    )


# The stacks of each branch the shipped inventory routes to the gpu-sm90 host: its sm90
# stacks and the CPU stacks whose ISA only its CPU runs (avx512bf16).
ON_THE_GPU_HOST = {"main": 10, "cuda-12_9": 12, "cuda-13_0": 12}


@pytest.mark.parametrize(("branch", "stacks"), [("main", 45), ("cuda-12_9", 58), ("cuda-13_0", 60)])
def test_without_a_cache_no_test_leg_leaves_its_build_runner(
    catalog: Catalog, shipped_inventory: Inventory, branch: str, stacks: int
) -> None:
    """The shipped inventory names no cache: nothing carries a build into another runner's
    store, so every stack tests where it built, and the GPU host builds what it tests."""
    assert shipped_inventory.cache is None
    entries = plan(catalog, shipped_inventory, branch)
    assert len(entries) == stacks
    for entry in entries:
        placed = entry.placement
        assert placed.runs_on == placed.test_runs_on, entry.name
        assert placed.timeout_minutes == placed.test_timeout_minutes, entry.name
    on_host = [e for e in entries if e.placement.runs_on[-1] == "gpu-sm90"]
    assert len(on_host) == ON_THE_GPU_HOST[branch]
    assert {e.placement.test.value for e in on_host} <= {"gpu", "cpu"}


@pytest.mark.parametrize("branch", sorted(ON_THE_GPU_HOST))
def test_with_a_cache_the_pool_builds_and_the_gpu_host_tests(
    catalog: Catalog, shipped_inventory: Inventory, branch: str
) -> None:
    cached = replace(
        shipped_inventory,
        cache=BinaryCache(
            url="file:///srv/nix-cache",
            public_keys=("ci-cache-1:" + "A" * 43 + "=",),
            signing_key_secret="NIX_CACHE_SIGNING_KEY",
        ),
    )
    entries = plan(catalog, cached, branch)
    split = [e for e in entries if e.placement.runs_on != e.placement.test_runs_on]
    assert len(split) == ON_THE_GPU_HOST[branch]
    for entry in split:
        assert entry.placement.runs_on[-1] == "builder-x86_64"
        assert entry.placement.test_runs_on[-1] == "gpu-sm90"
    assert not any(e.placement.runs_on[-1] == "gpu-sm90" for e in entries)


def test_default_inventory_labels_and_untested_builds(catalog: Catalog) -> None:
    entries = plan(catalog, default_inventory())
    labels = {e.platform: e.placement.runs_on for e in entries}
    assert labels == {
        Platform.X86_64_LINUX: ("self-hosted", "Linux", "X64"),
        Platform.AARCH64_LINUX: ("self-hosted", "Linux", "ARM64"),
        Platform.AARCH64_DARWIN: ("self-hosted", "macOS", "ARM64"),
    }
    linux = [e for e in entries if e.platform is not Platform.AARCH64_DARWIN]
    assert {e.placement.test.value for e in linux} == {"static"}
    assert all("declares no cpu_flags" in e.placement.test_reason for e in linux)


def test_a_platform_without_pool_names_the_platform_and_variants(catalog: Catalog) -> None:
    full = default_inventory()
    no_mac = Inventory(
        builders={p: pool for p, pool in full.builders.items() if p is not Platform.AARCH64_DARWIN},
        source="runners.yaml",
        builders_line=3,
    )
    with pytest.raises(SourceError) as caught:
        plan(catalog, no_mac)
    (problem,) = caught.value.problems
    assert problem.file == "runners.yaml" and problem.line == 3
    assert "aarch64-darwin" in problem.message
    assert "pytorch-python313-darwin-mps" in problem.message
    # Leaving the platform out is the way around it.
    assert len(plan(catalog, no_mac, platforms=(Platform.X86_64_LINUX,))) == 30


def _target(name: str, cuda: str = "12_8") -> Target:
    return Target(
        name=f"pytorch-python313-cuda{cuda}-{name}",
        package="pytorch",
        base=None,
        suffix=f"python313-cuda{cuda}-{name}",
        python="3.13",
        kind=Kind.GPU,
        platform=Platform.X86_64_LINUX,
        sm=name.split("-")[0],
        isa=name.split("-")[1],
        cpuinfo=("avx2",),
    )


def test_names_keep_the_cuda_only_where_two_would_collide() -> None:
    found = [_target("sm90-avx2"), _target("sm90-avx2", "12_9"), _target("sm80-avx2")]
    entries = matrix.plan(found, Selection(), default_inventory(), branch="main")
    assert [e.name for e in entries] == [
        "py313-cuda12_8-sm90-avx2",
        "py313-cuda12_9-sm90-avx2",
        "py313-sm80-avx2",
    ]
    # A name does not change with the selection.
    (one,) = matrix.plan(found, Selection(select=("*12_9*",)), default_inventory(), branch="main")
    assert one.name == "py313-cuda12_9-sm90-avx2"


def _entries(count: int) -> list[matrix.Entry]:
    found = [_target(f"sm{n}-avx2") for n in range(count)]
    return list(matrix.plan(found, Selection(), default_inventory(), branch="main"))


@pytest.mark.parametrize(
    ("count", "sizes"),
    [
        (0, []),
        (1, [1]),
        (256, [256]),
        (257, [129, 128]),
        (600, [200, 200, 200]),
        (1024, [256, 256, 256, 256]),
    ],
)
def test_shards_are_few_balanced_and_cover_every_entry_once(count: int, sizes: list[int]) -> None:
    entries = _entries(count)
    shards = sharding.shard(entries)
    assert [len(s) for s in shards] == sizes
    assert [e for s in shards for e in s] == entries


def test_more_than_max_shards_is_bad_input_that_explains_max_shards() -> None:
    entries = _entries(1025)
    with pytest.raises(InputError, match=r"--max-shards 5 .*matrix-4"):
        sharding.shard(entries)
    assert len(sharding.shard(entries, max_shards=5)) == 5


def test_github_outputs_follow_the_contract() -> None:
    entries = _entries(300)
    outputs = sharding.github_outputs(matrix.rows(entries))
    assert list(outputs) == [
        "count",
        "shards",
        "matrix-0",
        "matrix-1",
        "matrix-2",
        "matrix-3",
    ]
    assert outputs["count"] == "300" and outputs["shards"] == "2"
    shards = [json.loads(outputs[f"matrix-{i}"])["include"] for i in range(4)]
    assert [len(s) for s in shards] == [150, 150, 0, 0]
    assert outputs["matrix-3"] == '{"include":[]}'
    names = [e["name"] for s in shards for e in s]
    assert names == [e.name for e in entries]
    assert all("\n" not in v for v in outputs.values())


def test_a_full_shard_fits_a_job_output(catalog: Catalog, shipped_inventory: Inventory) -> None:
    """A job output holds at most 1 MB; the widest entry of the catalog, 256 times over."""
    widest = max(plan(catalog, shipped_inventory, "cuda-12_9"), key=lambda e: len(str(e.to_json())))
    outputs = sharding.github_outputs(matrix.rows([widest] * 256))
    text = outputs["matrix-0"]
    assert len(json.loads(text)["include"]) == 256
    assert len(text.encode()) < 256 * 1024


def test_each_shard_fits_one_environment_variable(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    """build-stack's mark-green job gets its shard through one environment variable, which
    Linux caps at 128 KiB ("NAME=value", MAX_ARG_STRLEN). The catalog's widest entry fits 256
    times; wider entries (longer runner labels) make fewer per shard, the rest wait."""
    widest = max(plan(catalog, shipped_inventory, "cuda-12_9"), key=lambda e: len(str(e.to_json())))
    assert sharding.fit(matrix.rows([widest] * 256)) == 256
    row = {**widest.to_json(), "runs_on": ["self-hosted", "x" * 300]}  # about 800 bytes
    wide = [{**row, "name": f"stack-{n:04d}"} for n in range(1024)]
    kept = sharding.fit(wide)
    assert 0 < kept < 1024
    outputs = sharding.github_outputs(wide[:kept])
    sizes = [len(outputs[f"matrix-{i}"].encode()) for i in range(4)]
    assert max(sizes) <= sharding.SHARD_TEXT_BUDGET < 128 * 1024
    # One more would not fit: the bound is what limits, not a margin of its own.
    more = sharding.github_outputs(wide[: kept + 1])
    assert max(len(more[f"matrix-{i}"].encode()) for i in range(4)) > sharding.SHARD_TEXT_BUDGET


def test_empty_matrix_outputs() -> None:
    outputs = sharding.github_outputs([])
    assert outputs["count"] == "0" and outputs["shards"] == "0"
    assert all(outputs[f"matrix-{i}"] == '{"include":[]}' for i in range(4))


def test_pool_timeouts_per_kind(catalog: Catalog) -> None:
    pools = {
        p: Pool(platform=p, labels=("x",), timeouts={Kind.GPU: 500, Kind.CPU: 60, Kind.DARWIN: 30})
        for p in Platform
    }
    entries = plan(catalog, Inventory(builders=pools))
    minutes = {e.name: e.placement.timeout_minutes for e in entries}
    assert minutes["py313-sm90-avx2"] == 500
    assert minutes["py313-cpu-avx2"] == 60
    assert minutes["py313-darwin-mps"] == 30


def test_printed_matrix_is_json_with_one_entry_per_line(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    matrix_rows = matrix.rows(plan(catalog, shipped_inventory))
    text = matrix.matrix_text(matrix_rows)
    assert json.loads(text) == {"include": matrix_rows}
    lines = text.splitlines()
    assert (lines[0], lines[-1]) == ('{"include": [', "]}")
    assert len(lines) == len(matrix_rows) + 2


def test_every_shipped_variant_can_be_run_or_statically_proven(
    catalog: Catalog, shipped_inventory: Inventory
) -> None:
    # Issue 18: with the shipped runners.yaml no variant of any branch is left unprovable.
    for branch in catalog.branches:
        entries = plan(catalog, shipped_inventory, branch, Group.NONE)
        scopes = {e.packages[0]: e.placement.test.value for e in entries}
        assert scopes and "none" not in scopes.values(), branch
        # Nothing that some runner could run is left to static proofs alone.
        assert {
            name for name, scope in scopes.items() if scope == "static" and "-armv" not in name
        } == set(), branch
