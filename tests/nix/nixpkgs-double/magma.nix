# magma (pkgs/development/libraries/science/math/magma/generic.nix; version per pin). The
# formal arguments here are only those this double needs: not read at a pin (no stored
# commit of the file), so a recipe must not `.override` magma; overrideAttrs (patches) is
# what the recipes use, as upstream's overlay does.
pin:
{ lib, stdenv, config, fetchpatch, cudaPackages, cmake, ninja, gfortran, cudaSupport ? config.cudaSupport, static ? false }:
let
  clockRateFix = "235aefb7b064954fce09d035c69907ba8a87cbcd";
in
stdenv.mkDerivation (finalAttrs: {
  pname = "magma";
  version = pin.magma.version;
  # Where the pin already carries the fix (nixpkgs PR #487064), as upstream's 13.1 pin does
  # (barstoolbluz/build-pytorch d395449: "remove redundant MAGMA patch overlay").
  patches = lib.optionals (pin.magma.clockRateFixed or false) [
    (fetchpatch {
      name = "cuda-13.0-clockrate-fix.patch";
      url = "https://github.com/icl-utk-edu/magma/commit/${clockRateFix}.patch";
      hash = "sha256-i9InbxD5HtfonB/GyF9nQhFmok3jZ73RxGcIciGBGvU=";
    })
  ];
  nativeBuildInputs = [ cmake ninja gfortran ] ++ lib.optionals cudaSupport [ cudaPackages.cuda_nvcc ];
  buildInputs = lib.optionals cudaSupport [ cudaPackages.cuda_cudart cudaPackages.libcublas ];
  cmakeFlags = lib.optionals cudaSupport [
    (lib.cmakeFeature "CMAKE_CUDA_ARCHITECTURES" (lib.concatMapStringsSep ";" (c: builtins.replaceStrings [ "." ] [ "" ] c) cudaPackages.flags.cudaCapabilities))
  ] ++ [ (lib.cmakeBool "BUILD_SHARED_LIBS" (!static)) ];
  # CUDA 13 removed cudaDeviceProp::clockRate: without the upstream fix the compile fails.
  __doubleFail = lib.optionalString (
    cudaSupport && cudaPackages.cudaMajorVersion == "13"
    && !(builtins.any (p: lib.elem clockRateFix (builtins.split "/" (p.url or ""))
          || builtins.match ".*${clockRateFix}.*" (p.url or "") != null) finalAttrs.patches)
  ) "error: 'struct cudaDeviceProp' has no member named 'clockRate' (magma ${pin.magma.version}, CUDA ${cudaPackages.cudaVersion})";
  passthru = { inherit cudaPackages cudaSupport; };
  meta = {
    license = lib.licenses.bsd3;
    platforms = [ "x86_64-linux" "aarch64-linux" "aarch64-darwin" "x86_64-darwin" ];
  };
})
