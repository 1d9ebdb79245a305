"""The runner inventory: loading with file:line validation, and where a variant goes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ci_tools.base.errors import SourceError
from ci_tools.catalog import grammar
from ci_tools.catalog.model import Kind, Platform
from ci_tools.plan.matrix import Target
from ci_tools.plan.runners import (
    DEFAULT_LABELS,
    CheckScope,
    Inventory,
    default_inventory,
    load_inventory,
    place,
)

AVX512_BF16 = ("avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_bf16")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "runners.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str, known_sms: tuple[str, ...] | None = None) -> Inventory:
    return load_inventory(write(tmp_path, text), "runners.yaml", known_sms=known_sms)


def problems(tmp_path: Path, text: str, known_sms: tuple[str, ...] | None = None) -> list[str]:
    with pytest.raises(SourceError) as caught:
        load(tmp_path, text, known_sms)
    return [str(p) for p in caught.value.problems]


def variant(
    *,
    sm: str | None = "sm90",
    isa: str | None = "avx512bf16",
    cpuinfo: tuple[str, ...] | None = AVX512_BF16,
    platform: Platform = Platform.X86_64_LINUX,
    kind: Kind | None = None,
) -> Target:
    resolved = kind or (Kind.GPU if sm else Kind.CPU)
    return Target(
        name="pytorch-x",
        package="pytorch",
        base=None,
        suffix="x",
        python="3.13",
        kind=resolved,
        platform=platform,
        sm=sm,
        isa=isa,
        cpuinfo=cpuinfo,
    )


INVENTORY = """
builders:
  x86_64-linux:
    labels: [self-hosted, Linux, X64]
    timeout_minutes: {gpu: 400, cpu: 100}
    cpu_flags: [avx2, fma, f16c, avx512f, avx512dq, avx512vl, avx512bw]
  aarch64-linux:
    labels: [self-hosted, Linux, ARM64]
  aarch64-darwin:
    labels: [self-hosted, macOS, ARM64]
    timeout_minutes: 90
test_runners:
  - labels: [self-hosted, Linux, X64, gpu-sm90-old]
    platform: x86_64-linux
    sm: sm90
    cpu_flags: [avx2, fma, f16c]
  - labels: [self-hosted, Linux, X64, gpu-sm90]
    platform: x86_64-linux
    sm: sm90
    cpu_flags: [avx2, fma, f16c, avx512f, avx512dq, avx512vl, avx512bw, avx512_bf16]
    timeout_minutes: 600
"""


def test_shipped_inventory_loads(repo_root: Path) -> None:
    inventory = load_inventory(repo_root / "runners.yaml", "runners.yaml", known_sms=("sm90",))
    assert set(inventory.builders) == set(Platform)
    for platform, labels in DEFAULT_LABELS.items():
        # The defaults plus the pool's own exclusive label (builder-*).
        assert inventory.builders[platform].labels[:-1] == labels
        assert inventory.builders[platform].labels[-1].startswith("builder-")
    assert [r.labels[-1] for r in inventory.test_runners] == ["gpu-sm90"]


WITH_CACHE = (
    INVENTORY
    + """cache:
  url: file:///srv/nix-cache
  public_keys: ["ci-cache-1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]
  signing_key_secret: NIX_CACHE_SIGNING_KEY
"""
)


def test_gpu_runner_whose_cpu_runs_the_isa(tmp_path: Path) -> None:
    placed = place(load(tmp_path, WITH_CACHE), variant())
    assert placed is not None
    # Built on the pool, tested on the GPU runner (with the runner's own timeout): the cache
    # carries the build from one to the other.
    assert placed.runs_on == ("self-hosted", "Linux", "X64")
    assert placed.test_runs_on == ("self-hosted", "Linux", "X64", "gpu-sm90")
    assert placed.test is CheckScope.GPU and placed.test_reason == ""
    assert (placed.timeout_minutes, placed.test_timeout_minutes) == (400, 600)


def test_without_a_cache_the_test_runner_builds_what_it_tests(tmp_path: Path) -> None:
    """Nothing could carry the pool's build into the GPU host's store: the host builds it."""
    inventory = load(tmp_path, INVENTORY)
    assert inventory.cache is None
    for target in (variant(), variant(sm=None, isa="avx512bf16", cpuinfo=AVX512_BF16)):
        placed = place(inventory, target)
        assert placed is not None
        assert placed.runs_on == placed.test_runs_on == ("self-hosted", "Linux", "X64", "gpu-sm90")
        assert placed.timeout_minutes == placed.test_timeout_minutes == 600
    # A variant tested on its pool builds there, as with a cache.
    pooled = place(inventory, variant(sm="sm80", cpuinfo=("avx2", "fma")))
    assert pooled is not None
    assert pooled.runs_on == pooled.test_runs_on == ("self-hosted", "Linux", "X64")
    assert pooled.timeout_minutes == 400


def test_an_isa_no_runner_runs_is_proven_statically_on_the_pool(tmp_path: Path) -> None:
    inventory = load(tmp_path, INVENTORY)
    placed = place(inventory, variant(cpuinfo=("avx512f", "avx512_vnni"), isa="avx512vnni"))
    assert placed is not None
    assert placed.runs_on == placed.test_runs_on == ("self-hosted", "Linux", "X64")
    assert placed.test is CheckScope.STATIC
    assert placed.test_reason == (
        "the sm90 test runners' CPUs lack avx512_vnni; no runner's CPU runs avx512vnni "
        "(builder pool x86_64-linux lacks avx512_vnni, and so does every test runner): "
        "read, not run"
    )
    assert placed.timeout_minutes == 400


def test_pool_cpu_test_when_no_gpu_runner_matches(tmp_path: Path) -> None:
    placed = place(load(tmp_path, INVENTORY), variant(sm="sm80", cpuinfo=("avx2", "fma")))
    assert placed is not None
    assert placed.test is CheckScope.CPU
    assert placed.test_reason == "no x86_64-linux test runner has an sm80 GPU"
    assert placed.test_runs_on == placed.runs_on  # the pool: GPU hosts stay free


def test_a_cpu_isa_only_a_test_runner_runs_is_tested_there(tmp_path: Path) -> None:
    cpu = variant(sm=None, isa="avx512bf16", cpuinfo=AVX512_BF16)
    placed = place(load(tmp_path, WITH_CACHE), cpu)
    assert placed is not None
    assert placed.test is CheckScope.CPU
    assert placed.runs_on == ("self-hosted", "Linux", "X64")
    assert placed.test_runs_on == ("self-hosted", "Linux", "X64", "gpu-sm90")
    assert placed.test_timeout_minutes == 600


def test_cpu_variant_on_a_pool_that_runs_it_is_fully_tested(tmp_path: Path) -> None:
    placed = place(load(tmp_path, INVENTORY), variant(sm=None, isa="avx2", cpuinfo=("avx2",)))
    assert placed is not None
    assert (placed.test, placed.test_reason, placed.timeout_minutes) == (CheckScope.CPU, "", 100)


def test_pool_without_cpu_flags_leaves_static_proofs(tmp_path: Path) -> None:
    arm = variant(sm=None, isa="armv9", cpuinfo=("sve", "sve2"), platform=Platform.AARCH64_LINUX)
    placed = place(load(tmp_path, INVENTORY), arm)
    assert placed is not None
    assert placed.test is CheckScope.STATIC
    assert "declares no cpu_flags" in placed.test_reason
    assert placed.timeout_minutes == 180  # the default for CPU builds


def test_unknown_isa_is_never_tested(tmp_path: Path) -> None:
    placed = place(load(tmp_path, INVENTORY), variant(isa="avx10", cpuinfo=None))
    assert placed is not None
    assert placed.test is CheckScope.NONE
    assert (
        placed.test_reason == "ISA avx10 is not in the ISA table: nobody can tell which CPUs run it"
    )


def test_darwin_builds_and_tests_on_the_mac_pool(tmp_path: Path) -> None:
    mac = variant(
        sm=None, isa=None, cpuinfo=None, platform=Platform.AARCH64_DARWIN, kind=Kind.DARWIN
    )
    placed = place(load(tmp_path, INVENTORY), mac)
    assert placed is not None
    assert placed.runs_on == ("self-hosted", "macOS", "ARM64")
    assert (placed.test, placed.timeout_minutes) == (CheckScope.GPU, 90)


def test_missing_pool_places_nothing(tmp_path: Path) -> None:
    inventory = load(tmp_path, "builders:\n  x86_64-linux:\n    labels: [x]\n")
    arm = variant(sm=None, isa="armv9", cpuinfo=("sve",), platform=Platform.AARCH64_LINUX)
    assert place(inventory, arm) is None
    assert place(default_inventory(), arm) is not None


def test_unknown_keys_offer_the_close_name(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        builders:
          x86_64-linux:
            lables: [self-hosted]
        test_runner: []
        """,
    )
    # The misspelt required key is reported once, with its right spelling, not also as missing.
    assert found == [
        'runners.yaml:3: unknown key "lables" in builders.x86_64-linux (did you mean "labels"?); '
        "allowed: cpu_flags, labels, timeout_minutes",
        'runners.yaml:4: unknown key "test_runner" in the runner inventory '
        '(did you mean "test_runners"?); allowed: builders, cache, preflight, test_runners',
    ]


def test_unknown_platform(tmp_path: Path) -> None:
    found = problems(tmp_path, "builders:\n  x86_64-linx:\n    labels: [a]\n")
    assert found == [
        'runners.yaml:2: builders: platform "x86_64-linx" is unknown (did you mean '
        '"x86_64-linux"?); known: x86_64-linux, aarch64-linux, aarch64-darwin'
    ]


def test_bad_values_name_their_lines(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        builders:
          x86_64-linux:
            labels: []
            timeout_minutes: 0
            cpu_flags: [AVX2]
          aarch64-linux:
            labels: [ok]
            timeout_minutes: {gpu: 60, cpux: 10}
        test_runners:
          - labels: [a]
            platform: aarch64-darwn
            sm: "90"
            cpu_flags: []
          - labels: [b]
            platform: x86_64-linux
            sm: sm900
            cpu_flags: [avx2]
            timeout_minutes: "long"
        """,
        known_sms=("sm90", "sm80"),
    )
    joined = "\n".join(found)
    assert "runners.yaml:3: builders.x86_64-linux.labels must not be empty" in joined
    assert "runners.yaml:4: builders.x86_64-linux.timeout_minutes must be a whole number" in joined
    assert (
        'runners.yaml:5: builders.x86_64-linux.cpu_flags: "AVX2" is not a /proc/cpuinfo flag'
        in joined
    )
    assert 'runners.yaml:8: unknown key "cpux" in builders.aarch64-linux.timeout_minutes' in joined
    assert 'runners.yaml:11: test_runners[0].platform "aarch64-darwn" is unknown' in joined
    assert 'runners.yaml:12: test_runners[0].sm "90" must look like "sm90"' in joined
    assert (
        'runners.yaml:16: test_runners[1].sm "sm900" is no GPU of the catalog (did you mean "sm90"?)'
        in joined
    )
    assert "runners.yaml:18: test_runners[1].timeout_minutes must be a whole number" in joined


def test_whole_file_problems(tmp_path: Path) -> None:
    assert problems(tmp_path, "") == [
        "runners.yaml:1: the runner inventory is empty; it needs builders"
    ]
    assert problems(tmp_path, "builders: [a]\n") == [
        "runners.yaml:1: builders must map platforms to pools, got a list"
    ]
    assert problems(tmp_path, "builders:\n  x86_64-linux: {labels: [a]}\ntest_runners: {}\n") == [
        "runners.yaml:3: test_runners must be a list, got a mapping"
    ]
    malformed = problems(tmp_path, "builders:\n  x86_64-linux: [\n")
    assert len(malformed) == 1 and malformed[0].startswith("runners.yaml:")
    assert "malformed YAML" in malformed[0]


def test_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="file not found"):
        load_inventory(tmp_path / "nope.yaml", "nope.yaml")


def test_scalar_timeout_covers_every_kind(tmp_path: Path) -> None:
    inventory = load(
        tmp_path, "builders:\n  x86_64-linux:\n    labels: [a]\n    timeout_minutes: 45\n"
    )
    assert dict(inventory.builders[Platform.X86_64_LINUX].timeouts) == dict.fromkeys(Kind, 45)


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("  flox: 1.14\n", 'runners.yaml:2: preflight.flox must be a quoted string such as "1.14"'),
        ("  flox: latest\n", 'runners.yaml:2: preflight.flox "latest" is not a dotted version'),
        ("  min_free_gb: lots\n", "runners.yaml:2: preflight.min_free_gb must be a whole number"),
        ("  min_free_gb: -1\n", "runners.yaml:2: preflight.min_free_gb must be a whole number"),
        ("  free: 60\n", "runners.yaml:2: unknown key"),
    ],
)
def test_preflight_settings_are_checked_at_their_line(
    tmp_path: Path, section: str, expected: str
) -> None:
    """preflight.py reads them on every runner: a typo fails the plan, not every build job."""
    text = "preflight:\n" + section + "builders:\n  x86_64-linux:\n    labels: [self-hosted]\n"
    found = problems(tmp_path, text)
    assert any(p.startswith(expected) for p in found), found


def test_an_empty_test_runners_key_means_none(tmp_path: Path) -> None:
    inventory = load(tmp_path, "builders:\n  x86_64-linux: {labels: [a]}\ntest_runners:\n")
    assert inventory.test_runners == ()


def test_timeouts_by_kind_fill_in_the_defaults(tmp_path: Path) -> None:
    inventory = load(
        tmp_path, "builders:\n  x86_64-linux:\n    labels: [a]\n    timeout_minutes: {cpu: 30}\n"
    )
    timeouts = dict(inventory.builders[Platform.X86_64_LINUX].timeouts)
    assert timeouts == {Kind.GPU: 360, Kind.CPU: 30, Kind.DARWIN: 180}


CACHE = """
builders:
  x86_64-linux:
    labels: [self-hosted]
cache:
  url: {url}
  public_keys: ["{key}"]
  signing_key_secret: {secret}
"""
GOOD_KEY = "ci-cache-1:" + "A" * 43 + "="


@pytest.mark.parametrize(
    "url",
    [
        "file:///srv/nix-cache",
        "s3://acme-nix-cache?region=eu-west-1",
        "https://cache.example.org/acme",
        "http://harmonia.lan:5000",
    ],
)
def test_the_cache_names_a_store_url_keys_and_a_secret(tmp_path: Path, url: str) -> None:
    inventory = load(tmp_path, CACHE.format(url=url, key=GOOD_KEY, secret="NIX_CACHE_KEY"))
    assert inventory.cache is not None
    assert inventory.cache.url == url
    assert inventory.cache.public_keys == (GOOD_KEY,)
    assert inventory.cache.signing_key_secret == "NIX_CACHE_KEY"
    assert load(tmp_path, INVENTORY).cache is None


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("url", "ftp://cache.example.org", "is not a Nix store URL"),
        ("url", "file://relative/path", "is not a Nix store URL"),
        ("url", '"https://x.org/$(id)"', "is not a Nix store URL"),
        ("key", "ci-cache-1:short=", "is not a Nix public key"),
        ("key", "A" * 43 + "=", "is not a Nix public key"),
        ("secret", "GITHUB_TOKEN", "is not a GitHub secret name"),
        ("secret", "1KEY", "is not a GitHub secret name"),
    ],
)
def test_a_bad_cache_is_refused_at_its_line(
    tmp_path: Path, field: str, value: str, says: str
) -> None:
    values = {"url": "file:///srv/c", "key": GOOD_KEY, "secret": "NIX_CACHE_KEY"} | {field: value}
    found = problems(tmp_path, CACHE.format(**values))
    line = {"url": 5, "key": 6, "secret": 7}[field]
    assert len(found) == 1 and found[0].startswith(f"runners.yaml:{line}:"), found
    assert says in found[0]


@pytest.mark.parametrize(
    "url",
    [
        "file:///srv/c?secret-key=/etc/nix/cache.sec",
        "s3://acme-nix-cache?region=eu-west-1&secret-key=/home/runner/key",
        "https://cache.example.org/acme?compression=zstd&secret-keys=/a,/b",
        "https://cache.example.org?local-nar-cache=/tmp/nars",
        "file:///srv/c?ssh-key=/root/.ssh/id_ed25519",
        "file:///srv/c?priority=10&state=/nix/var&log=/tmp/log",
    ],
)
def test_a_cache_url_setting_that_makes_nix_read_a_local_file_is_refused(
    tmp_path: Path, url: str
) -> None:
    # Issue 29: ?secret-key=PATH makes Nix read that file and sign with it.
    found = problems(tmp_path, CACHE.format(url=url, key=GOOD_KEY, secret="NIX_CACHE_KEY"))
    assert len(found) == 1 and found[0].startswith("runners.yaml:5:"), found
    assert "makes Nix read a file of the machine it runs on" in found[0], found
    assert "remove it" in found[0]
    setting = next(
        name for name in grammar.LOCAL_FILE_SETTINGS if f"{name}=" in url.split("?", 1)[1]
    )
    assert f"`{setting}`" in found[0]


def test_a_cache_url_may_set_settings_that_read_no_file(tmp_path: Path) -> None:
    url = "s3://acme-nix-cache?region=eu-west-1&compression=zstd&priority=30&secret-keyring=x"
    inventory = load(tmp_path, CACHE.format(url=url, key=GOOD_KEY, secret="NIX_CACHE_KEY"))
    assert inventory.cache is not None and inventory.cache.url == url


def test_a_cpu_flag_no_isa_needs_is_refused_at_its_line(tmp_path: Path) -> None:
    text = INVENTORY.replace("avx512_bf16]", "avx512_bf61]")
    path = write(tmp_path, text)
    with pytest.raises(SourceError) as caught:
        load_inventory(path, "runners.yaml", known_flags=(*AVX512_BF16, "avx2", "fma", "f16c"))
    found = [str(p) for p in caught.value.problems]
    assert len(found) == 1 and found[0].startswith("runners.yaml:19:"), found
    assert '"avx512_bf61" is no flag' in found[0] and 'did you mean "avx512_bf16"' in found[0]


@pytest.mark.parametrize(
    ("labels", "other"),
    [
        ("[self-hosted, Linux, X64]", "builders.x86_64-linux"),
        ("[self-hosted, Linux]", "builders.x86_64-linux"),
        ("[self-hosted, Linux, gpu-sm90-old]", "test_runners[0]"),
    ],
)
def test_a_test_runner_without_a_label_of_its_own_is_refused(
    tmp_path: Path, labels: str, other: str
) -> None:
    """Another runner with all its labels may take its jobs: a GPU test on a host without the
    GPU, or (without a cache) a build on one host and its test on another."""
    text = INVENTORY.replace("[self-hosted, Linux, X64, gpu-sm90]\n", labels + "\n", 1)
    assert text != INVENTORY
    found = problems(tmp_path, text)
    assert found == [
        f"runners.yaml:16: test_runners[1].labels: {other} has every one of them, so a job "
        "routed to this test runner may run there: give it a label of its own (gpu-sm90)"
    ]
