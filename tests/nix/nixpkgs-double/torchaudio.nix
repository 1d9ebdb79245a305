# python3Packages.torchaudio: pkgs/development/python-modules/torchaudio/default.nix.
# Formal arguments of torchaudio 2.9.1 (issue 9's appendix, read next to 6b516b42), no `...`.
# No branch of the shipped catalogs builds it yet; the double keeps it callable and refusing.
pin:
{
  lib,
  symlinkJoin,
  buildPythonPackage,
  fetchFromGitHub,
  fetchpatch,
  cmake,
  pkg-config,
  ninja,
  ffmpeg_6-full,
  pybind11,
  sox,
  torch,
  llvmPackages,
  cudaSupport ? torch.cudaSupport,
  cudaPackages,
  rocmSupport ? torch.rocmSupport,
  rocmPackages,
  gpuTargets ? [ ],
}:

buildPythonPackage rec {
  pname = "torchaudio";
  version = pin.torchaudio.version;
  pyproject = true;
  src = fetchFromGitHub.__doubleOpaqueSource "audio-v${version}";
  nativeBuildInputs = [ cmake pkg-config ninja pybind11 ]
    ++ lib.optionals cudaSupport [ cudaPackages.cuda_nvcc ];
  buildInputs = [ ffmpeg_6-full sox torch.cxxdev ];
  dependencies = [ torch ];
  preConfigure = lib.optionalString cudaSupport ''
    export TORCH_CUDA_ARCH_LIST="${lib.concatStringsSep ";" torch.cudaCapabilities}"
    export USE_CUDA=1
  '';
  meta = {
    description = "PyTorch audio library";
    license = lib.licenses.bsd3;
    platforms = [ "x86_64-linux" "aarch64-linux" ]
      ++ lib.optionals (!cudaSupport) [ "aarch64-darwin" "x86_64-darwin" ];
  };
}
