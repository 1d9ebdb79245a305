# python3Packages.torchvision: pkgs/development/python-modules/torchvision/default.nix.
# Formal arguments as of torchvision 0.23.0 in nixpkgs (issue 9's appendix, the list read next
# to 6b516b42); no `cudaSupport`, no `...`: it follows `torch`. The arch list is torch's
# passthru.cudaCapabilities (the body pattern read at NixOS/nixpkgs 36dba9c4, unchanged since):
# config.cudaCapabilities intersected with torch's supported list, not torch's gpuTargets.
pin:
{
  lib,
  stdenv,
  torch,
  apple-sdk_13,
  buildPythonPackage,
  darwinMinVersionHook,
  fetchFromGitHub,
  libpng,
  ninja,
  which,
  libjpeg_turbo,
  numpy,
  pillow,
  scipy,
  pytest,
  writableTmpDirAsHomeHook,
}:

let
  inherit (torch) cudaCapabilities cudaPackages cudaSupport;
in
buildPythonPackage rec {
  pname = "torchvision";
  version = pin.torchvision.version;
  pyproject = true;

  src = fetchFromGitHub.__doubleOpaqueSource "vision-v${version}";

  nativeBuildInputs = [ libpng ninja which ]
    ++ lib.optionals cudaSupport [ cudaPackages.cuda_nvcc ];

  buildInputs = [ libjpeg_turbo libpng torch.cxxdev ];

  dependencies = [ numpy pillow torch scipy ];

  preConfigure = ''
    export TORCHVISION_INCLUDE="${libjpeg_turbo.dev}/include/"
    export TORCHVISION_LIBRARY="${libjpeg_turbo}/lib/"
  ''
  + lib.optionalString cudaSupport ''
    export TORCH_CUDA_ARCH_LIST="${lib.concatStringsSep ";" cudaCapabilities}"
    export FORCE_CUDA=1
  '';

  meta = {
    description = "PyTorch vision library";
    license = lib.licenses.bsd3;
    platforms = [ "x86_64-linux" "aarch64-linux" ]
      ++ lib.optionals (!cudaSupport) [ "aarch64-darwin" "x86_64-darwin" ];
  };
}
