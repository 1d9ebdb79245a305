# The cudaPackages_X_Y sets a pin has (pkgs/top-level/cuda-packages.nix and
# pkgs/development/cuda-modules/, per pin in pins/). A pin without a set lacks the attribute,
# so a recipe naming it fails like it would against that nixpkgs. Every redistributable is
# unfree: without config.allowUnfree nothing CUDA evaluates (check-meta).
{ lib, leaf, mkStdenv, mkCc, hostPlatform, config, pkgs, pin }:
let

  mkSet = attr: facts:
    let
      cudaVersion = facts.version;
      cudaMajorVersion = lib.versions.major cudaVersion;
      cudaMajorMinorVersion = lib.versions.majorMinor cudaVersion;
      # flags.cudaCapabilities: config.cudaCapabilities when given, else the set's defaults.
      cudaCapabilities = config.cudaCapabilities or facts.defaultCapabilities;
      redist = pname: extra: leaf pname ({
        version = cudaVersion;
        outputs = [ "out" "lib" "dev" "include" "static" ];
        meta = { license = lib.licenses.nvidiaCuda; platforms = [ "x86_64-linux" "aarch64-linux" ]; };
      } // extra);
      # cuDNN >= 9.12 supports compute capability 7.5 and newer only: with a lower one in
      # config.cudaCapabilities it is a bad platform, and whatever links it is refused
      # (issue 9 item 2; no stored nixpkgs commit has the assertion's text:
      # cudnn.nix at 2973b267 still keeps its platformAssertions commented out).
      tooOld = builtins.filter (c: lib.versionOlder c "7.5") cudaCapabilities;
      cudnnRefuses = lib.versionAtLeast facts.cudnn "9.12" && tooOld != [ ];
    in
    {
      inherit cudaVersion cudaMajorVersion cudaMajorMinorVersion;
      flags = { inherit cudaCapabilities; isJetsonBuild = false; };
      # The CUDA compiler's host toolchain: a different stdenv from pkgs.stdenv.
      backendStdenv = mkStdenv (mkCc "gcc-wrapper-cuda${cudaMajorVersion}-backend");
      cudnn = redist "cudnn" {
        version = facts.cudnn;
        meta = {
          license = lib.licenses.nvidiaCudnn;
          platforms = [ "x86_64-linux" "aarch64-linux" ];
          badPlatforms = lib.optionals cudnnRefuses [ hostPlatform.system ];
        };
      };
      nccl = redist "nccl" { } // { meta = { unsupported = false; }; };
      cudatoolkit = redist "cudatoolkit" { };
      autoAddCudaCompatRunpath = leaf "auto-add-cuda-compat-runpath-hook" { };
    }
    // lib.genAttrs [
      "cuda_cccl" "cuda_cudart" "cuda_cupti" "cuda_nvcc" "cuda_nvml_dev" "cuda_nvrtc" "cuda_nvtx"
      "libcublas" "libcufft" "libcufile" "libcurand" "libcusolver" "libcusparse" "libcusparse_lt"
      "cuda_profiler_api"
    ] (n: redist n { });
  sets = builtins.mapAttrs mkSet pin.cudaPackages;
in
sets
// builtins.mapAttrs (alias: target: pkgs.${target}) pin.cudaAliases
// { cudaPackages = pkgs.${pin.cudaDefault}; }
