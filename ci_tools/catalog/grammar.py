"""What each value of the catalog, the runner inventory and the arguments may be.

One place for the load-time grammar: every value that reaches Nix, a shell, a workflow or a
README is checked against its rule here when it is read (file:line, exit 2), before anything
is rendered. Rendering still quotes every value (Nix string escaping, `lib.escapeShellArg` in
the templates); the grammar is the other half, so a value that could only be dangerous or
nonsensical is refused where a person can fix it.

Patterns are ASCII only (`re.ASCII`): Python's `\\d` also matches fullwidth and Arabic-Indic digits, which
`int()` then reads as digits. The JSON Schema in `ci_tools/catalog/schema/` uses the same patterns
(tests/fuzz/test_schema.py holds the two to one verdict).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Rule:
    """A named value grammar: a full-match pattern, a length bound, an example."""

    name: str
    pattern: str
    max_length: int
    example: str

    def problem(self, text: str) -> str | None:
        """Why `text` breaks the rule (to follow `"<text>" `), or None when it is fine."""
        if len(text) > self.max_length:
            return f"is longer than {self.max_length} characters"
        if not re.fullmatch(self.pattern, text, re.ASCII):
            return f"is not a {self.name} (expected {self.pattern}, e.g. {self.example})"
        return None


def _rule(name: str, pattern: str, example: str, max_length: int = 64) -> Rule:
    return Rule(name=name, pattern=pattern, max_length=max_length, example=example)


# Names that become file names, Nix attribute names and package names.
IDENT = _rule("name", r"[a-z][a-z0-9_]*", "avx512bf16")
PACKAGE_NAME = _rule("package name", r"[a-z][a-z0-9]*", "torchvision")
SM = _rule("SM name", r"sm[0-9]{2,4}", "sm90", max_length=8)
CAPABILITY = _rule("compute capability", r"[0-9]{1,3}\.[0-9]", '"9.0"', max_length=8)
# A dotted version of at most four parts of at most six digits: "12.9.1", "2.10.0".
VERSION = _rule("dotted version", r"[0-9]{1,6}(\.[0-9]{1,6}){0,3}", '"12.8"', max_length=27)
# The Pythons the pinned nixpkgs have a pythonXYPackages set of, as the nixpkgs stand-in
# models them (tests/nix/nixpkgs-double/top-level.nix): nixpkgs dropped python39 before
# these pins (NixOS/nixpkgs#397258, 2025-04) and python310 after some of them
# (NixOS/nixpkgs#490538, 2026-02). Another Python: add it here and to the stand-in.
PIN_PYTHONS = ("3.11", "3.12", "3.13")
PYTHON = _rule("Python version the pins have", r"3\.1[1-3]", '"3.13"', max_length=4)
# Git ref names (git-check-ref-format): no "..", no "//", no leading "/" or "-", no ".lock".
BRANCH = _rule(
    "branch name",
    r"(?!.*\.\.)(?!.*//)(?!.*\.lock$)(?!.*/$)(?!.*\.$)[A-Za-z0-9][A-Za-z0-9._/-]*",
    "cuda-12_9",
    max_length=100,
)
NIX_IDENT = _rule("Nix attribute name", r"[A-Za-z_][A-Za-z0-9_'-]*", "torch")
NIXPKGS_REV = _rule("nixpkgs commit", r"[0-9a-f]{40}", "40 hex digits", max_length=40)
NIX_SHA256 = _rule(
    "Nix hash",
    r"sha256-[A-Za-z0-9+/]{43}=|[0-9a-df-np-sv-z]{52}|[0-9a-f]{64}",
    "sha256-...= (SRI), 52 base32 or 64 hex digits",
    max_length=71,
)
# A versioned set or alias: the bare `cudaPackages` is what nix/nixpkgs.nix's overlay
# redefines (`cudaPackages = final.${name}`), so naming it recurses for ever.
CUDA_PACKAGES = _rule(
    "cudaPackages attribute", r"cudaPackages_[0-9]{1,2}(_[0-9]{1,2})?", "cudaPackages_12_9"
)
# A CUDA toolkit of a branch: `cuda` + major + `_` + minor, as in package names.
TOOLKIT = _rule("toolkit name", r"cuda[0-9]{1,2}_[0-9]{1,2}", "cuda12_8", max_length=10)
# An overlay: the file nix/overlays/NAME.nix.
OVERLAY = _rule("overlay name", r"[a-z0-9][a-z0-9-]*", "magma-cuda13-clockrate")
# The hash of a source override: an SRI sha256, as fetchFromGitHub's `hash` takes it.
SRI_SHA256 = _rule("SRI sha256 hash", r"sha256-[A-Za-z0-9+/]{43}=", "sha256-...=", max_length=51)
# A PyTorch build switch turned off with `export USE_<FEATURE>=0` in the builder's shell.
FEATURE = _rule("PyTorch feature name", r"[A-Z][A-Z0-9_]*", "FBGEMM", max_length=32)
# One compiler flag pasted into CFLAGS/CXXFLAGS: -m... and nothing a shell would read.
COMPILER_FLAG = _rule("compiler flag", r"-m[a-z0-9][a-z0-9.+=_-]*", "-mavx512f")
# /proc/cpuinfo `flags` (x86) and `Features` (aarch64) entries.
CPUINFO_FLAG = _rule("/proc/cpuinfo flag", r"[a-z0-9_]+", "avx512_bf16", max_length=32)
TORCH_CAPABILITY = _rule("torch CPU capability", r"[A-Z][A-Z0-9_]*", "AVX512", max_length=16)
WORKLOAD = _rule("workload name", r"[a-z0-9][a-z0-9-]*", "bf16-training")
# ci-tools.yaml: a glob of paths under .flox/pkgs/ (fnmatch), and a name suffix that marks
# another build of a variant ("nightly" in "...-armv9-nightly").
GLOB = _rule("path glob", r"[A-Za-z0-9._*?\[\]!/+-]+", '"*.nix.backup"', max_length=200)
BUILD = _rule("build suffix", r"[a-z][a-z0-9]*", "nightly", max_length=32)
# A self-hosted runner label: becomes `runs-on`. Letters, digits, `.`, `_`, `-` (no
# expressions, globs, commas, spaces or control characters).
RUNNER_LABEL = _rule("runner label", r"[A-Za-z0-9][A-Za-z0-9._-]*", "gpu-sm90", max_length=100)
# A Nix binary cache, as a store URL Nix opens (Nix manual, "Store URL format"): a folder
# (file:///srv/cache), an S3 bucket (s3://bucket?region=eu-west-1) or an HTTP(S) server
# (attic, harmonia, nix-serve, cachix), each with optional `?key=value&...` store settings.
# Never a setting that makes Nix read (or write) a file of the machine it runs on: the Nix
# manual's store types ("Store Types", `nix help-stores`) name `secret-key` ("Path to the
# secret key used to sign the binary cache") and `local-nar-cache` ("Path to a local cache of
# NARs") of the file, S3 and HTTP binary cache stores, `secret-keys` (a list of such paths)
# in later Nix, `ssh-key` ("Path to the SSH private key") of the SSH stores, and `root`,
# `state`, `log` and `real` (folders) of the local store. Build legs sign with the key from
# the secret `signing_key_secret` names, never with a file a URL points Nix at.
LOCAL_FILE_SETTINGS = (
    "secret-key",
    "secret-keys",
    "local-nar-cache",
    "ssh-key",
    "root",
    "state",
    "log",
    "real",
)
_SETTING = rf"(?!(?:{'|'.join(LOCAL_FILE_SETTINGS)})=)[A-Za-z][A-Za-z0-9_-]*=[A-Za-z0-9._~%:/+-]*"
_PARAMS = rf"(\?{_SETTING}(&{_SETTING})*)?"
_HOST = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*"
STORE_URL = _rule(
    "Nix store URL",
    rf"(file://(/[A-Za-z0-9._~+-]+)+/?|s3://[a-z0-9][a-z0-9.-]{{1,61}}[a-z0-9]"
    rf"|https?://{_HOST}(:[0-9]{{1,5}})?(/[A-Za-z0-9._~+-]*)*){_PARAMS}",
    "s3://acme-nix-cache?region=eu-west-1",
    max_length=300,
)


def local_file_settings(url: str) -> list[str]:
    """The settings of a store URL's query that make Nix read a local file (in order)."""
    _, mark, query = url.partition("?")
    names = [item.partition("=")[0] for item in query.split("&")] if mark else []
    return [name for name in names if name in LOCAL_FILE_SETTINGS]


# A public key Nix trusts (`trusted-public-keys`): NAME:BASE64 of the 32-byte ed25519 key, as
# `nix-store --generate-binary-cache-key` writes it.
NIX_PUBLIC_KEY = _rule(
    "Nix public key",
    r"[A-Za-z0-9][A-Za-z0-9._-]*:[A-Za-z0-9+/]{43}=",
    "cache.example.org-1:<44 base64 characters>",
    max_length=150,
)
# The name of a GitHub Actions secret: letters, digits and `_`, not starting with a digit
# or GITHUB_ (GitHub's naming rules for secrets).
SECRET_NAME = _rule(
    "secret name",
    r"(?![Gg][Ii][Tt][Hh][Uu][Bb]_)[A-Za-z_][A-Za-z0-9_]*",
    "NIX_CACHE_SIGNING_KEY",
    max_length=100,
)
# A FloxHub organisation (a GitHub-style handle): it is printed into `flox install ORG/NAME`.
ORG = _rule("Flox organisation", r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,38})", "acme", max_length=39)

# Free text (descriptions, hardware lists, GPU families) ends up in Nix strings, `#` comments,
# Markdown tables and the README between `<!-- BEGIN/END generated -->` markers.
TEXT_MAX_LENGTH = 200
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def text_problem(text: str) -> str | None:
    """Why `text` cannot be catalog prose, or None."""
    if len(text) > TEXT_MAX_LENGTH:
        return f"is longer than {TEXT_MAX_LENGTH} characters"
    for char in text:
        category = unicodedata.category(char)
        if category == "Cs":
            return f"holds a lone surrogate (U+{ord(char):04X}); write the character itself"
        if category in ("Cc", "Co", "Cn") or char in _BIDI:
            return f"holds the control or unassigned character U+{ord(char):04X}"
    # The README's generated blocks are found by these markers (readme.splice).
    if "<!--" in text or "-->" in text:
        return "must not hold `<!--` or `-->` (the generated blocks of the README and docs/ end at them)"
    return None
