# MAGMA 2.9.0 reads cudaDeviceProp::clockRate, which CUDA 13 removed ("'struct cudaDeviceProp'
# has no member named 'clockRate'"). Upstream's fix, icl-utk-edu/magma commit 235aefb7
# (issue icl-utk-edu/magma#61; in nixpkgs via PR #487064, newer than the pins used here).
# Hash from barstoolbluz/build-pytorch, branch pytorch-2.10-python313.
final: prev: {
  magma = prev.magma.overrideAttrs (old: {
    patches = (old.patches or [ ]) ++ [
      (final.fetchpatch {
        name = "cuda-13.0-clockrate-fix.patch";
        url = "https://github.com/icl-utk-edu/magma/commit/235aefb7b064954fce09d035c69907ba8a87cbcd.patch";
        hash = "sha256-i9InbxD5HtfonB/GyF9nQhFmok3jZ73RxGcIciGBGvU=";
      })
    ];
  });
}
