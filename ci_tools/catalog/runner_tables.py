"""The shape of `runners.yaml`, each key declared once (see `shape.py`), beside the catalog's
in `tables.py`, which re-exports `RUNNERS`, `PLATFORMS` and `DEFAULT_MINUTES`."""

from __future__ import annotations

from ci_tools.catalog import grammar as g
from ci_tools.catalog.scalars import Enum, Int, StoreUrl, Text, Version
from ci_tools.catalog.shape import Either, Field, ListOf, MapOf, Table

PLATFORMS = ("x86_64-linux", "aarch64-linux", "aarch64-darwin")  # LINUX first (tables.py)

# --- runners.yaml ---------------------------------------------------------------------------

# GitHub cancels a self-hosted job after 5 days whatever the workflow says.
MAX_TIMEOUT = 5 * 24 * 60
# A CUDA build of torch takes hours; CPU-only and MPS builds are quicker.
DEFAULT_MINUTES = {"gpu": 360, "cpu": 180, "darwin": 180}
MINUTES = Int(1, MAX_TIMEOUT, " of minutes", " (GitHub stops self-hosted jobs after 5 days)")
TIMEOUTS = Either(
    Table(
        name="timeouts",
        fields=tuple(
            Field(kind, MINUTES, f"For {kind} variants.", default=minutes)
            for kind, minutes in DEFAULT_MINUTES.items()
        ),
    ),
    MINUTES,
)
LABELS = ListOf(Text(g.RUNNER_LABEL), non_empty=True)
CPU_FLAGS = ListOf(Text(g.CPUINFO_FLAG))
TIMEOUT_DOC = "Minutes a job may take: one number, or one per kind (gpu, cpu, darwin)."

POOL = Table(
    name="pool",
    fields=(
        Field("labels", LABELS, "The job's runs-on labels.", True),
        Field("timeout_minutes", TIMEOUTS, TIMEOUT_DOC, default_doc="gpu 360, cpu 180, darwin 180"),
        Field(
            "cpu_flags",
            CPU_FLAGS,
            "The /proc/cpuinfo flags every CPU of the pool has: its builds are tested there "
            "when they cover the ISA's.",
            default_doc="unknown: no test",
        ),
    ),
)

TEST_RUNNER = Table(
    name="test_runner",
    fields=(
        Field("labels", LABELS, "The job's runs-on labels.", True),
        Field("platform", Enum(PLATFORMS), "Its platform.", True),
        Field("sm", Text(g.SM, hint='must look like "sm90"'), "The SM of its GPU.", True),
        Field("cpu_flags", CPU_FLAGS, "The /proc/cpuinfo flags of its CPU.", True),
        Field("timeout_minutes", TIMEOUTS, TIMEOUT_DOC, default_doc="its platform pool's"),
    ),
)

PREFLIGHT = Table(
    name="preflight",
    doc="What `ci-tools preflight` requires of a self-hosted runner.",
    fields=(
        Field("flox", Version(), "The least flox version a runner must have."),
        Field(
            "min_free_gb",
            Int(0, 1_000_000, " of GiB"),
            "Free disk under the Nix store a build needs (garbage is collected first).",
        ),
    ),
)

CACHE = Table(
    name="cache",
    doc="The Nix binary cache every job shares: build legs push, test and publish legs substitute.",
    fields=(
        Field(
            "url",
            StoreUrl(
                g.STORE_URL,
                hint="is not a Nix store URL: use file:///ABSOLUTE/PATH, s3://BUCKET?region=R "
                "or https://HOST/PATH (attic, harmonia, nix-serve, cachix), with optional "
                "?key=value settings",
            ),
            "The store URL build legs copy each closure to and the others copy it from.",
            True,
        ),
        Field(
            "public_keys",
            ListOf(
                Text(
                    g.NIX_PUBLIC_KEY,
                    hint="is not a Nix public key NAME:BASE64 (the 32-byte key "
                    "`nix-store --generate-binary-cache-key` writes)",
                ),
                non_empty=True,
                unique=True,
            ),
            "The keys whose signatures a substituted path must carry (Nix's trusted-public-keys).",
            True,
        ),
        Field(
            "signing_key_secret",
            Text(
                g.SECRET_NAME,
                hint="is not a GitHub secret name (letters, digits and _, not starting with a "
                "digit or GITHUB_)",
            ),
            "The name of the GitHub secret holding the signing key (its secret half); never "
            "the key itself.",
            True,
        ),
    ),
)

RUNNERS = Table(
    name="runners",
    label="the runner inventory",
    doc="The self-hosted runners `ci-tools matrix` schedules on.",
    fields=(
        Field(
            "builders",
            MapOf(Enum(PLATFORMS), POOL, "platforms to pools", "platform", True, "platform"),
            "One pool of builders per platform.",
            True,
        ),
        Field(
            "test_runners",
            ListOf(TEST_RUNNER),
            "Machines with a GPU, which test the variants of their SM, and any whose ISA no "
            "builder pool runs; without a cache they also build what they test.",
            default=(),
            nullable=True,
        ),
        Field("preflight", PREFLIGHT, PREFLIGHT.doc),
        Field(
            "cache",
            CACHE,
            CACHE.doc,
            default_doc="none: each stack builds on the runner that tests it (a test runner "
            "builds what it tests), and no leg substitutes",
        ),
    ),
)
