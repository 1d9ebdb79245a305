# stdenv.mkDerivation as nixpkgs has it (pkgs/stdenv/generic/make-derivation.nix, stored at
# NixOS/nixpkgs 8c2682d3, and pkgs/stdenv/generic/check-meta.nix), reduced to what decides
# evaluation. The overrideAttrs dispatch (`f0 super` a function -> `f0 self super`; a plain
# set merged as is) follows make-derivation.nix's, whose text the search tool shows in its
# copies (e.g. buildNimPackage); check-meta's refusal texts are nixpkgs' wording as quoted in
# public error reports ("is marked as broken, refusing to evaluate", "has an unfree license",
# "is not available on the requested hostPlatform"). Modelled: the `finalAttrs:` fixpoint and
# `overrideAttrs` (both the `prev:` and the `finalAttrs: prev:` forms), `env`, `outputs`,
# `passthru`, and check-meta's refusals. The
# derivation is real (`derivation`, a .drv) but its builder is /bin/sh writing each output,
# so realising it in a private store takes milliseconds.
{ lib, config, system, hostPlatform }:
let
  # check-meta.nix: refusals are evaluation errors raised when the .drv is asked for, not
  # when the attribute set is looked at (meta and passthru stay readable).
  checkMeta = name: meta:
    let
      license = meta.license or { free = true; };
      licenses = if builtins.isList license then license else [ license ];
      unfree = builtins.any (l: !(l.free or true)) licenses;
      platforms = meta.platforms or [ system ];
      badPlatforms = meta.badPlatforms or [ ];
      where = "in the nixpkgs double for ${system}";
    in
    if (meta.broken or false) && !(config.allowBroken or false) then
      throw "Package ‘${name}’ ${where} is marked as broken, refusing to evaluate.${
        lib.optionalString (meta ? brokenConditions) " Broken because: ${lib.concatStringsSep ", " meta.brokenConditions}"
      }\n\na) To temporarily allow broken packages, you can use an environment variable\n   for a single invocation of the nix tools.\n\n     $ export NIXPKGS_ALLOW_BROKEN=1\n\nb) For `nixos-rebuild` you can set\n  { nixpkgs.config.allowBroken = true; }"
    else if unfree && !(config.allowUnfree or false) then
      throw "Package ‘${name}’ ${where} has an unfree license (‘${lib.concatMapStringsSep ", " (l: l.shortName) licenses}’), refusing to evaluate."
    else if (!builtins.elem system platforms || builtins.elem system badPlatforms)
      && !(config.allowUnsupportedSystem or false) then
      throw "Package ‘${name}’ ${where} is not available on the requested hostPlatform:\n  hostPlatform.system = \"${system}\"\n  package.meta.platforms = ${builtins.toJSON platforms}\n  package.meta.badPlatforms = ${builtins.toJSON badPlatforms}"
    else
      true;

  # Everything but these reaches the derivation's environment, as in make-derivation.nix.
  notEnv = [ "passthru" "meta" "env" "pos" "outputs" "name" ] ++ doubleOnly;
  doubleOnly = [ "__doubleFail" "__doubleInterpreter" "__doubleSite" ];

  # A host path handed to the builder's shell as one word.
  hostPath = path:
    if builtins.match "/[A-Za-z0-9._+/-]+" path == null then
      throw "nixpkgs double: prebuilt path ${builtins.toJSON path} is not a plain absolute path"
    else
      path;

  # Where python-packages.nix found a prebuilt match: an interpreter wrapper, or a
  # site-packages of links whose propagated-build-inputs names the interpreter.
  prebuiltEnv = attrs:
    let
      interpreter = attrs.__doubleInterpreter or null;
      site = attrs.__doubleSite or null;
    in
    {
      doubleInterpreter = if interpreter == null then "" else hostPath interpreter;
      doubleSiteDir = if site == null then "" else site.dir;
      doubleSiteLinks = if site == null then "" else lib.concatMapStringsSep " " hostPath site.paths;
      doublePropagated = if site == null then "" else "${site.python}";
    };

  # Each output holds its name; a prebuilt match replaces `out` (no sandbox in the tests'
  # private stores, so the host paths are reachable; coreutils by absolute path, as a build's
  # PATH is unset).
  builderScript = ''
    if [ -n "$doubleFail" ]; then echo "$doubleFail" >&2; exit 1; fi
    for o in $outputs; do eval "echo \"\$name\" > \"\$$o\""; done
    if [ -n "$doubleInterpreter" ]; then
      /bin/rm "$out" && /bin/mkdir -p "$out/bin"
      printf '#!/bin/sh\nexec %s -S "$@"\n' "$doubleInterpreter" > "$out/bin/python3"
      /bin/chmod +x "$out/bin/python3"
      /bin/ln -s python3 "$out/bin/python''${version%.*}"
    fi
    if [ -n "$doubleSiteDir" ]; then
      /bin/rm "$out" && /bin/mkdir -p "$out/$doubleSiteDir" "$out/nix-support"
      for p in $doubleSiteLinks; do /bin/ln -s "$p" "$out/$doubleSiteDir/"; done
      echo "$doublePropagated" > "$out/nix-support/propagated-build-inputs"
    fi
  '';

  mkDerivationSimple = overrideAttrs: attrs:
    let
      name = attrs.name or "${attrs.pname}-${attrs.version}";
      outputs = attrs.outputs or [ "out" ];
      meta = attrs.meta or { };
      passthru = attrs.passthru or { };
      ok = checkMeta name meta;
      drvAttrs = builtins.removeAttrs attrs notEnv // (attrs.env or { }) // {
        inherit name system outputs;
        builder = "/bin/sh";
        # A derivation the double knows would not build (MAGMA on CUDA 13 without its patch)
        # fails when realised, as the real one does at compile time.
        doubleFail = attrs.__doubleFail or "";
        args = [ "-c" builderScript ];
      } // prebuiltEnv attrs;
      drv = derivation drvAttrs;
      outputOf = o: {
        type = "derivation";
        inherit name;
        outputName = o;
        outputSpecified = true;
        drvPath = assert ok; drv.drvPath;
        outPath = assert ok; drv.${o}.outPath;
      };
      self = builtins.removeAttrs attrs ([ "env" ] ++ doubleOnly) // passthru // {
        type = "derivation";
        inherit name outputs meta passthru overrideAttrs drvAttrs;
        drvPath = assert ok; drv.drvPath;
        outPath = assert ok; drv.outPath;
        outputName = "out";
      } // lib.genAttrs outputs outputOf;
    in
    self;

  makeDerivationExtensible = rattrs:
    let
      args = rattrs (args // { inherit finalPackage overrideAttrs; });
      finalPackage = mkDerivationSimple overrideAttrs args;
      overrideAttrs = f0:
        let
          f = self: super:
            let x = f0 super; in if builtins.isFunction x then f0 self super else x;
        in
        makeDerivationExtensible (
          self:
          let super = rattrs self; in
          super // (if builtins.isFunction f0 || f0 ? __functor then f self super else f0)
        );
    in
    finalPackage;
in
fpOrAttrs: makeDerivationExtensible (if builtins.isFunction fpOrAttrs then fpOrAttrs else _: fpOrAttrs)
