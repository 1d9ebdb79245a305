# Calls one Nix expression build the way flox's NEF does, for the flox double.
#
# package-builder/nef/lib/mkOverlay.nix (flox 6536dac): each package is `callPackage path { }`
# with flox's own nixpkgs as the scope. callPackage (nixpkgs lib/customisation.nix,
# `callPackageWith`) passes every formal argument that names an attribute of that scope, and
# aborts on a formal argument with no default that names none. So a recipe that asks for
# `pkgs`, `lib` or `python3Packages` gets FLOX's nixpkgs, never its own pin.
#
# `fetchPinnedNixpkgs` is no nixpkgs attribute, so flox leaves the recipe's default in place
# (the real `builtins.fetchTarball` of the pin). That default is the one thing the double
# replaces: the test stand-in for the network, the nixpkgs double's fetch.
{ recipe, attrPath, floxNixpkgsRev, fetchPinnedNixpkgs }:
let
  callee = import recipe;
  formals = builtins.functionArgs callee;
  wanted = builtins.filter (n: n != "fetchPinnedNixpkgs") (builtins.attrNames formals);
  # Evaluated only when the recipe asks for something from flox's scope (lazy), so a recipe
  # that keeps to its door never touches flox's nixpkgs.
  floxPkgs =
    let base = import (fetchPinnedNixpkgs { rev = floxNixpkgsRev; sha256 = null; }) { };
    in base // { pkgs = base; }; # nixpkgs' fixpoint holds itself as `pkgs`
  fromScope = if wanted == [ ] then { } else builtins.intersectAttrs formals floxPkgs;
  door = if formals ? fetchPinnedNixpkgs then { inherit fetchPinnedNixpkgs; } else { };
  args = door // fromScope;
  missing = builtins.filter (n: !formals.${n} && !(args ? ${n})) (builtins.attrNames formals);
  called =
    if missing == [ ] then callee args
    else abort "lib.customisation.callPackageWith: Function called without required argument \"${builtins.head missing}\" at ${recipe}";
in
builtins.addErrorContext "while defining '${attrPath}' by evaluating '${recipe}'" called
