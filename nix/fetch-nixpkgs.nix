# The nixpkgs door of every recipe (.flox/pkgs/*.nix take it as their one argument,
# `fetchPinnedNixpkgs`, defaulting to this file). It returns the source tree of nixpkgs at
# `rev`, which `import` turns into the nixpkgs function. `sha256` (catalog `nixpkgs.sha256`,
# optional) pins the content too; without it Nix fetches unverified and pure evaluation
# refuses. Tests pass tests/nix/nixpkgs-double/fetch.nix here instead.
{ rev, sha256 ? null }:
builtins.fetchTarball (
  { url = "https://github.com/NixOS/nixpkgs/archive/${rev}.tar.gz"; }
  // (if sha256 == null then { } else { inherit sha256; })
)
