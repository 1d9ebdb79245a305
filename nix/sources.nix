# Source overrides: a Python package built from a newer upstream release than the pin ships
# (catalog `sources`). Applied through `pythonPackagesExtensions`, so every Python set of the
# pin sees the same override. Version and hash come from the catalog; the fetch is
# fixed-output, so a wrong hash fails the build instead of building something else.
sources:
final: prev:
let
  inherit (final) lib;
  upstream = import ./upstream.nix;
  override = attribute: pkg: source:
    pkg.overrideAttrs (old: {
      inherit (source) version;
      src = final.fetchFromGitHub {
        inherit (upstream.${attribute}) owner repo fetchSubmodules;
        rev = "v${source.version}";
        inherit (source) hash;
      };
      # nixpkgs' patches are written for the version it pins and do not apply to another.
      patches = [ ];
    }
    # torch's PYTORCH_BUILD_VERSION is bound with `rec` to the pinned version, and CMake reads
    # version.txt: without both, 2.10.0's TORCH_FEATURE_VERSION static assertion fails
    # (upstream docs/pytorch-2.10-cuda13-build-notes.md, "Version Mismatch").
    // lib.optionalAttrs (attribute == "torch") {
      PYTORCH_BUILD_VERSION = source.version;
      cmakeFlags = (old.cmakeFlags or [ ]) ++ [ "-DTORCH_BUILD_VERSION=${source.version}" ];
      postPatch = (old.postPatch or "") + ''
        echo ${lib.escapeShellArg source.version} > version.txt
      '';
    });
in
if sources == { } then
  { }
else
  {
    pythonPackagesExtensions = prev.pythonPackagesExtensions ++ [
      (pyfinal: pyprev: builtins.mapAttrs (attribute: source: override attribute pyprev.${attribute} source) sources)
    ];
  }
