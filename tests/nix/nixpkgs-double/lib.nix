# The part of nixpkgs' `lib` that the recipes, the builders in nix/ and this double use.
# Each function keeps the semantics of the nixpkgs function of the same name (the file is
# named per function; bodies re-derived, not copied). makeOverridable was checked against
# lib/customisation.nix as the search tool stores it (NixOS/nixpkgs 927c4f83 and later
# copies); the others follow the nixpkgs manual's lib reference, not a read at a pin. Only
# what is used is here: a recipe that calls a lib function this file lacks fails to evaluate.
let
  inherit (builtins)
    attrNames
    concatMap
    concatStringsSep
    elem
    filter
    foldl'
    functionArgs
    genList
    isAttrs
    isFunction
    length
    listToAttrs
    replaceStrings
    ;
in
rec {
  inherit concatStringsSep elem filter foldl' functionArgs isFunction;

  # lib/fixed-points.nix: fix, extends, composeManyExtensions.
  fix = f: let x = f x; in x;
  extends = overlay: f: final: let prev = f final; in prev // overlay final prev;
  composeExtensions = f: g: final: prev:
    let fApplied = f final prev; prev' = prev // fApplied; in fApplied // g final prev';
  composeManyExtensions = foldl' composeExtensions (_: _: { });

  # lib/trivial.nix, lib/lists.nix, lib/strings.nix, lib/attrsets.nix
  id = x: x;
  const = x: _: x;
  optional = cond: x: if cond then [ x ] else [ ];
  optionals = cond: xs: if cond then xs else [ ];
  optionalString = cond: s: if cond then s else "";
  optionalAttrs = cond: as: if cond then as else { };
  concatMapStrings = f: xs: concatStringsSep "" (map f xs);
  concatMapStringsSep = sep: f: xs: concatStringsSep sep (map f xs);
  intersectLists = e: filter (x: elem x e);
  subtractLists = e: filter (x: !(elem x e));
  any = builtins.any;
  all = builtins.all;
  filterAttrs = pred: set:
    listToAttrs (concatMap (n: let v = set.${n}; in if pred n v then [ { name = n; value = v; } ] else [ ]) (attrNames set));
  genAttrs = names: f: listToAttrs (map (n: { name = n; value = f n; }) names);
  mapAttrs = builtins.mapAttrs;
  attrValues = builtins.attrValues;
  versionOlder = a: b: builtins.compareVersions a b == -1;
  versionAtLeast = a: b: !(versionOlder a b);
  versions = {
    major = v: builtins.head (builtins.splitVersion v);
    majorMinor = v: let p = builtins.splitVersion v; in concatStringsSep "." [ (builtins.elemAt p 0) (builtins.elemAt p 1) ];
  };
  throwIf = cond: msg: if cond then throw msg else id;
  cmakeFeature = name: value: "-D${name}:STRING=${value}";
  cmakeBool = name: value: "-D${name}:BOOL=${if value then "TRUE" else "FALSE"}";

  # lib/strings.nix escapeShellArg: a string the shell reads back as one word, unchanged.
  escapeShellArg = arg:
    let s = toString arg; in
    if builtins.match "[[:alnum:],._+:@%/-]+" s != null then s
    else "'${replaceStrings [ "'" ] [ "'\\''" ] s}'";
  escapeShellArgs = concatMapStringsSep " " escapeShellArg;

  # lib/meta.nix getExe', lib/attrsets.nix getOutput/getLib/getDev/getBin, lib getName.
  getOutput = output: pkg: if pkg ? outputSpecified && pkg.outputSpecified then pkg else pkg.${output} or pkg.out or pkg;
  getLib = getOutput "lib";
  getDev = getOutput "dev";
  getBin = getOutput "bin";
  getExe' = pkg: exe: "${getBin pkg}/bin/${exe}";
  getName = pkg: pkg.pname or (builtins.parseDrvName pkg.name).name;

  # lib/customisation.nix makeOverridable: `.override` re-calls the function with the original
  # arguments updated; the function's own formals decide what is accepted, so an argument the
  # function does not declare (and it has no `...`) is Nix's "called with unexpected argument"
  # error, as with any callPackage'd package. `overrideAttrs` on the result keeps `.override`.
  makeOverridable = f: origArgs:
    let
      result = f origArgs;
      overrideWith = newArgs: origArgs // (if isFunction newArgs then newArgs origArgs else newArgs);
      overrideResult = g: makeOverridable (args: g (f args)) origArgs;
    in
    if isAttrs result then
      result
      // { override = newArgs: makeOverridable f (overrideWith newArgs); }
      // (if result ? overrideAttrs then { overrideAttrs = fdrv: overrideResult (x: x.overrideAttrs fdrv); } else { })
    else if isFunction result then
      {
        override = newArgs: makeOverridable f (overrideWith newArgs);
        __functor = self: result;
      }
    else
      result;

  # lib/customisation.nix callPackageWith: the function's formals are filled from `autoArgs`
  # by name; a formal without default that `autoArgs` lacks is an evaluation error.
  callPackageWith = autoArgs: fn: args:
    let
      f = if isFunction fn then fn else import fn;
      fargs = functionArgs f;
      allArgs = builtins.intersectAttrs fargs autoArgs // args;
      missing = filter (n: !fargs.${n} && !(allArgs ? ${n})) (attrNames fargs);
    in
    if missing != [ ] then
      throw "Function called without required argument \"${builtins.head missing}\""
    else
      makeOverridable f allArgs;

  licenses = {
    bsd3 = { shortName = "bsd3"; free = true; };
    mit = { shortName = "mit"; free = true; };
    # pkgs/development/cuda-modules: NVIDIA's redistributables carry unfree licenses.
    nvidiaCuda = { shortName = "CUDA EULA"; free = false; };
    nvidiaCudnn = { shortName = "cuDNN EULA"; free = false; };
  };
}
