# A stand-in for nixpkgs, just large enough to evaluate the generated recipes without a
# nixpkgs checkout. Packages record what `override` and `overrideAttrs` did to them, so the
# tests can read back the arguments and attributes a recipe set.
{ system ? "x86_64-linux" }:

let
  # A package: its attributes plus `override` (function arguments, recorded in
  # `overrideArgs`) and `overrideAttrs` (attributes merged over the old ones).
  mkPackage = attrs: attrs // {
    override = args: mkPackage (attrs // { overrideArgs = (attrs.overrideArgs or { }) // args; });
    overrideAttrs = f: mkPackage (attrs // f attrs);
  };

  pythonPackage = pname: mkPackage {
    inherit pname;
    version = "0.0.0-mock";
    outPath = "/nix/store/00000000000000000000000000000000-${pname}-mock";
    overrideArgs = { };
    passthru = { };
    meta = { description = "mock ${pname}"; platforms = [ system ]; };
    preConfigure = "";
    nativeBuildInputs = [ ];
    buildInputs = [ ];
  };

  storePath = name: { outPath = "/nix/store/11111111111111111111111111111111-${name}"; };

  pythonSet = {
    torch = pythonPackage "torch";
    torchvision = pythonPackage "torchvision";
    torchaudio = pythonPackage "torchaudio";
  };

  # The few nixpkgs lib functions the builders call, written with builtins.
  lib = rec {
    concatStringsSep = builtins.concatStringsSep;
    concatMapStrings = f: list: builtins.concatStringsSep "" (map f list);
    concatMapStringsSep = sep: f: list: builtins.concatStringsSep sep (map f list);
    optionals = cond: list: if cond then list else [ ];
    optionalString = cond: string: if cond then string else "";
    elem = builtins.elem;
    filter = builtins.filter;
  };
in
{
  inherit lib;
  stdenv = {
    cc = storePath "gcc-wrapper" // {
      cc = storePath "gcc";
      bintools = storePath "binutils-wrapper" // { bintools = storePath "binutils"; };
    };
  };
  removeReferencesTo = storePath "remove-references-to";
  openblas = storePath "openblas";
  python311Packages = pythonSet;
  python312Packages = pythonSet;
  python313Packages = pythonSet;
}
