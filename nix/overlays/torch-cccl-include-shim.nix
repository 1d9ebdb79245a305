# PyTorch 2.10's bundled CUTLASS includes <cccl/cuda/std/...>; CUDA 13's CCCL installs
# <cuda/std/...>. A directory of links `cccl/{cuda,cub,thrust,nv}` into the toolkit's CCCL,
# put first on the include path ("fatal error: cccl/cuda/std/utility: No such file or
# directory"; upstream docs/pytorch-2.10-cuda13-build-notes.md, "CCCL Header Path").
final: prev: {
  pythonPackagesExtensions = prev.pythonPackagesExtensions ++ [
    (pyfinal: pyprev: {
      torch = pyprev.torch.overrideAttrs (old: {
        cmakeFlags = (old.cmakeFlags or [ ]) ++ [ "-DCMAKE_CUDA_FLAGS=-I/build/cccl-compat" ];
        preConfigure = (old.preConfigure or "") + ''
          mkdir -p /build/cccl-compat/cccl
          for dir in cuda cub thrust nv; do
            ln -sfn ${final.cudaPackages.cuda_cccl}/include/$dir /build/cccl-compat/cccl/$dir
          done
          export CXXFLAGS="-I/build/cccl-compat $CXXFLAGS"
          export CFLAGS="-I/build/cccl-compat $CFLAGS"
          export CUDAFLAGS="-I/build/cccl-compat $CUDAFLAGS"
        '';
      });
    })
  ];
}
