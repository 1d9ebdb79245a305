# python3XXPackages (pkgs/top-level/python-packages.nix with
# pkgs/development/interpreters/python/passthrufun.nix; not read at a pin): a scope whose callPackage fills arguments from the Python set first, then from pkgs; every
# function of `pkgs.pythonPackagesExtensions` is applied as an overlay of the Python set, in
# order (the nixpkgs way to change a Python package for every interpreter).
{ lib, leaf, pin, mkDerivation, minor, pkgs, config }:
let
  python = leaf "python3-3.${minor}" {
    passthru = {
      sitePackages = "lib/python3.${minor}/site-packages";
      pythonOnBuildForHost = { interpreter = "${python}/bin/python3.${minor}"; };
      pythonVersion = "3.${minor}";
    };
  };

  # pkgs/development/interpreters/python/mk-python-derivation.nix: a stdenv.mkDerivation whose
  # `dependencies` propagate; `buildPythonPackage.override { stdenv = ...; }` picks the stdenv.
  buildPythonPackage = lib.makeOverridable (
    { stdenv }:
    attrs:
    stdenv.mkDerivation (
      finalAttrs:
      let a = if builtins.isFunction attrs then attrs finalAttrs else attrs; in
      builtins.removeAttrs a [ "dependencies" "pyproject" ]
      // {
        nativeBuildInputs = (a.nativeBuildInputs or [ ]) ++ [ python ];
        propagatedBuildInputs = (a.propagatedBuildInputs or [ ]) ++ (a.dependencies or [ ]);
        # mk-python-derivation.nix always passes `python` (and updateScript) through.
        passthru = { inherit python; } // (a.passthru or { });
      }
    )
  ) { inherit (pkgs) stdenv; };

  base = self: {
    inherit python buildPythonPackage;
    callPackage = lib.callPackageWith (pkgs // { config = pkgs.config; } // self);
    torch = self.callPackage (import ./torch.nix pin) { };
    torchvision = self.callPackage (import ./torchvision.nix pin) { };
    torchaudio = self.callPackage (import ./torchaudio.nix pin) { };
  }
  // lib.genAttrs [
    "astunparse" "expecttest" "filelock" "fsspec" "hypothesis" "jinja2" "networkx" "packaging"
    "psutil" "pyyaml" "requests" "sympy" "types-dataclasses" "typing-extensions" "triton"
    "triton-cuda" "pillow" "six" "tensorboard" "protobuf" "pybind11" "numpy" "scipy" "pytest"
  ] (n: leaf "python3.${minor}-${n}" { });
in
lib.fix (lib.extends (lib.composeManyExtensions pkgs.pythonPackagesExtensions) base)
