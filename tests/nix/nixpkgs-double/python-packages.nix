# python3XXPackages (pkgs/top-level/python-packages.nix with
# pkgs/development/interpreters/python/passthrufun.nix; not read at a pin): a scope whose callPackage fills arguments from the Python set first, then from pkgs; every
# function of `pkgs.pythonPackagesExtensions` is applied as an overlay of the Python set, in
# order (the nixpkgs way to change a Python package for every interpreter).
#
# With a prebuilt description (top-level.nix, ./prebuilt.py) of an interpreter of this minor
# version, `python` realises to a wrapper that runs it with `-S` (only the closure's
# site-packages importable), named python3-<its full version> as nixpkgs names CPython; and a
# package whose own pname and final version equal a described distribution's realises to it:
# site-packages linking that distribution and its requirements, and nix-support/
# propagated-build-inputs naming `python`, so the runtime closure holds the interpreter as
# nixpkgs' does. Anything else stays a placeholder.
{ lib, leaf, pin, mkDerivation, minor, pkgs, config, prebuilt ? null }:
let
  sitePackages = "lib/python3.${minor}/site-packages";
  host = if prebuilt != null && prebuilt.python.minor == "3.${minor}" then prebuilt else null;

  python = leaf "python3" {
    version = if host != null then host.python.version else "3.${minor}";
    __doubleInterpreter = if host != null then host.python.executable else null;
    passthru = {
      inherit sitePackages;
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
      let
        a = if builtins.isFunction attrs then attrs finalAttrs else attrs;
        described = if host == null then null else host.packages.${a.pname} or null;
      in
      builtins.removeAttrs a [ "dependencies" "pyproject" ]
      // {
        # The package's own pname (a recipe may rename it) and its final version.
        __doubleSite =
          if described != null && described.version == finalAttrs.version then
            { dir = sitePackages; inherit (described) paths; inherit python; }
          else
            null;
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
