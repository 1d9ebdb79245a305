# The nixpkgs function of one pinned revision: `import <nixpkgs> { config; overlays; system; }`
# (pkgs/top-level/impure.nix's arguments; not read at a pin). `pin` holds the
# facts that differ per revision (pins/<rev>.nix). Overlays are applied through a real
# fixpoint (lib.extends over the base set), so an overlay sees `final` and `prev` as in nixpkgs.
pin:
{
  config ? { },
  overlays ? [ ],
  system ? builtins.currentSystem,
  localSystem ? { inherit system; },
  crossSystem ? null,
  crossOverlays ? [ ],
  ...
}:

let
  lib = import ./lib.nix;

  # pkgs/top-level/config.nix: the defaults of the options the recipes set or rely on.
  cfg = {
    allowBroken = false;
    allowUnfree = false;
    allowUnsupportedSystem = false;
    cudaSupport = false;
    rocmSupport = false;
  } // config;

  hostPlatform = {
    inherit system;
    isLinux = lib.elem system [ "x86_64-linux" "aarch64-linux" ];
    isDarwin = lib.elem system [ "x86_64-darwin" "aarch64-darwin" ];
    isAarch64 = lib.elem system [ "aarch64-linux" "aarch64-darwin" ];
    isx86_64 = lib.elem system [ "x86_64-linux" "x86_64-darwin" ];
  };

  mkDerivation = import ./make-derivation.nix { inherit lib hostPlatform system; config = cfg; };

  # The double's one impurity, for tests that run what they build: NIXPKGS_DOUBLE_PREBUILT
  # names a file ./prebuilt.py wrote, describing a host interpreter and the torch installed
  # in it. Matching packages realise to them (python-packages.nix); unset, every output is a
  # placeholder.
  prebuiltFile = builtins.getEnv "NIXPKGS_DOUBLE_PREBUILT";
  prebuilt = if prebuiltFile == "" then null else builtins.fromJSON (builtins.readFile prebuiltFile);

  # A leaf package: something torch links or runs, whose own recipe does not matter here.
  leaf = pname: attrs: mkDerivation ({ inherit pname; version = "0"; } // attrs);

  # pkgs/stdenv/linux: stdenv.cc is a wrapper with `cc`, `bintools` and `targetPrefix`.
  mkCc = ccName:
    let bintools = leaf "binutils-wrapper" { passthru.bintools = leaf "binutils" { }; };
    in leaf ccName { passthru = { cc = leaf "${ccName}-unwrapped" { }; inherit bintools; targetPrefix = ""; isClang = hostPlatform.isDarwin; }; };
  mkStdenv = cc: { inherit cc hostPlatform mkDerivation; buildPlatform = hostPlatform; targetPlatform = hostPlatform; };
  stdenv = mkStdenv (mkCc (if hostPlatform.isDarwin then "clang-wrapper" else "gcc-wrapper"));

  # pkgs/build-support/fetchgithub and fetchurl: fixed-output derivations; without a hash
  # fetchurl throws, a malformed one is Nix's own "invalid SRI hash" error.
  fod = name: url: args:
    let hash = args.hash or args.sha256 or null; in
    if hash == null || hash == "" then
      throw "fetchurl requires a hash for fixed-output derivation: ${url}"
    else
      (derivation {
        inherit name system url;
        builder = "/bin/sh";
        args = [ "-c" "echo the nixpkgs double cannot download ${url} >&2; exit 1" ];
        outputHashMode = "recursive";
        outputHash = hash;
      }) // { inherit url; };
  fetchFromGitHub = {
    __functor = _: { owner, repo, rev ? null, tag ? null, hash ? null, sha256 ? null, fetchSubmodules ? false, name ? "source", ... }@args:
      let ref = if tag != null then tag else rev; in
      if ref == null then throw "fetchFromGitHub requires one of either `rev` or `tag` to be provided (not both)."
      else fod name "https://github.com/${owner}/${repo}/archive/${ref}.tar.gz" args
        // { inherit owner repo rev fetchSubmodules; };
    # The source of a package as the pin ships it: opaque, one derivation per version.
    __doubleOpaqueSource = name: leaf "source-${name}" { };
  };
  fetchpatch = { url, hash ? null, sha256 ? null, name ? "patch", ... }@args: fod name url args;

  base = final:
    let
      callPackage = lib.callPackageWith (final // { inherit lib; config = cfg; });
      cuda = import ./cuda-packages.nix { inherit lib leaf mkStdenv mkCc hostPlatform pin; config = cfg; pkgs = final; };
      python = minor: import ./python-packages.nix {
        inherit lib leaf pin mkDerivation minor prebuilt;
        pkgs = final;
        config = cfg;
      };
    in
    {
      inherit lib stdenv fetchFromGitHub fetchpatch callPackage;
      config = cfg;
      targetPackages = { inherit (final) stdenv; };
      runCommand = name: env: script: leaf name { passthru.script = script; };
      writeShellScript = name: text: leaf name { };
      symlinkJoin = { name, paths, ... }: leaf name { };
      openblas = leaf "openblas" { };
      blas = leaf "blas" { passthru.provider = final.openblas; };
      binutils = leaf "binutils-wrapper" { };
      openssl = leaf "openssl" { outputs = [ "bin" "out" ]; };
      # pkgs/development/libraries/science/math/magma (2.9.0 at these pins): built for
      # config.cudaCapabilities; CUDA 13 removed cudaDeviceProp.clockRate, so 2.9.0 without
      # icl-utk-edu/magma commit 235aefb7 fails to compile (issue 9 item 1; upstream notes).
      magma = callPackage (import ./magma.nix pin) { };
      magma-cuda-static = final.magma.override { cudaSupport = true; static = true; };
      magma-hip = leaf "magma-hip" { };
      pythonPackagesExtensions = [ ];
      # Assumed present at these pins, as python312 and python313 are (not read at a pin).
      python311Packages = python "11";
      python312Packages = python "12";
      python313Packages = python "13";
      python3Packages = final.python313Packages;
    }
    // lib.genAttrs [
      "fetchFromGitLab" "git-unroll" "autoAddDriverRunpath" "mpi" "cmake" "which" "pkg-config"
      "removeReferencesTo" "numactl" "ninja" "vulkan-headers" "vulkan-loader" "shaderc"
      "apple-sdk_13" "darwinMinVersionHook" "libpng" "writableTmpDirAsHomeHook" "ffmpeg_6-full"
      "sox" "gfortran"
    ] (n: leaf n { })
    // {
      libjpeg_turbo = leaf "libjpeg-turbo" { outputs = [ "out" "dev" ]; };
      llvmPackages = { openmp = leaf "openmp" { }; };
      rocmPackages = { clr = { gpuTargets = [ ]; }; triton = leaf "rocm-triton" { }; };
    }
    // cuda;
in
lib.fix (lib.foldl' (f: overlay: lib.extends overlay f) base overlays)
