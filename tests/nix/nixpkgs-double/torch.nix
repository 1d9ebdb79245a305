# python3Packages.torch as nixpkgs builds it from source:
# pkgs/development/python-modules/torch/source/default.nix, read at NixOS/nixpkgs
# 6b516b42dd0f19e2ab9c9dd391cd40752a9dc096 (torch 2.9.1). The formal arguments are that file's,
# in its order, with no `...`: `.override { x = ...; }` for an x not listed is an evaluation
# error, as in nixpkgs. The body keeps what a recipe can observe or must respect, each marked
# with what it models; build steps that only matter to a real compiler are left out.
# `pin` carries the facts that differ per nixpkgs revision (the version, see pins/).
pin:
{
  stdenv,
  lib,
  fetchFromGitHub,
  fetchFromGitLab,
  git-unroll,
  buildPythonPackage,
  python,
  runCommand,
  writeShellScript,
  config,
  cudaSupport ? config.cudaSupport,
  cudaPackages,
  autoAddDriverRunpath,
  effectiveMagma ?
    if cudaSupport then
      magma-cuda-static
    else if rocmSupport then
      magma-hip
    else
      magma,
  magma,
  magma-hip,
  magma-cuda-static,
  useSystemNccl ? (cudaSupport && !cudaPackages.nccl.meta.unsupported || rocmSupport),
  MPISupport ? false,
  mpi,
  buildDocs ? false,
  targetPackages,
  callPackage,
  cmake,
  symlinkJoin,
  which,
  pybind11,
  pkg-config,
  removeReferencesTo,
  openssl,
  numactl,
  llvmPackages,
  astunparse,
  binutils,
  expecttest,
  filelock,
  fsspec,
  hypothesis,
  jinja2,
  networkx,
  packaging,
  psutil,
  pyyaml,
  requests,
  sympy,
  types-dataclasses,
  typing-extensions,
  tritonSupport ? (!stdenv.hostPlatform.isDarwin),
  triton,
  _tritonEffective ?
    if cudaSupport then
      triton-cuda
    else if rocmSupport then
      rocmPackages.triton
    else
      triton,
  triton-cuda,
  mklDnnSupport ? !(stdenv.hostPlatform.isDarwin && stdenv.hostPlatform.isAarch64),
  blas,
  ninja,
  pillow,
  six,
  tensorboard,
  protobuf,
  rocmSupport ? config.rocmSupport,
  rocmPackages,
  gpuTargets ? [ ],
  vulkanSupport ? false,
  vulkan-headers,
  vulkan-loader,
  shaderc,
}:

let
  inherit (cudaPackages) cudnn flags nccl;
  setBool = v: if v then "1" else "0";

  # supportedTorchCudaCapabilities at 6b516b42 (torch/utils/cpp_extension.py's list): no
  # 11.0, so a Thor (sm110) build gets an empty passthru.cudaCapabilities.
  supportedTorchCudaCapabilities =
    let
      real = [ "3.5" "3.7" "5.0" "5.2" "5.3" "6.0" "6.1" "6.2" "7.0" "7.2" "7.5" "8.0" "8.6" "8.7"
        "8.9" "9.0" "9.0a" "10.0" "10.0" "10.0a" "10.1" "10.1a" "10.3" "10.3a" "12.0" "12.0a"
        "12.1" "12.1a" ];
    in
    real ++ map (x: "${x}+PTX") real;
  supportedCudaCapabilities = lib.intersectLists flags.cudaCapabilities supportedTorchCudaCapabilities;
  unsupportedCudaCapabilities = lib.subtractLists supportedCudaCapabilities flags.cudaCapabilities;

  gpuArchWarner = supported: unsupported:
    lib.throwIf (supported == [ ]) (
      "No supported GPU targets specified. Requested GPU targets: "
      + lib.concatStringsSep ", " unsupported
    ) supported;
  gpuTargetString = lib.concatStringsSep ";" (
    if gpuTargets != [ ] then gpuTargets
    else if cudaSupport then gpuArchWarner supportedCudaCapabilities unsupportedCudaCapabilities
    else if rocmSupport then rocmPackages.clr.gpuTargets
    else throw "No GPU targets specified"
  );

  # brokenConditions, verbatim in meaning: CUDA 13 is "Unsupported CUDA version" at 2.9.1.
  brokenConditions = lib.filterAttrs (_: cond: cond) {
    "CUDA and ROCm are mutually exclusive" = cudaSupport && rocmSupport;
    "CUDA is not targeting Linux" = cudaSupport && !stdenv.hostPlatform.isLinux;
    "Unsupported CUDA version" =
      cudaSupport && !(builtins.elem cudaPackages.cudaMajorVersion [ "11" "12" ]);
    "MPI cudatoolkit does not match cudaPackages.cudatoolkit" =
      MPISupport && cudaSupport && (mpi.cudatoolkit != cudaPackages.cudatoolkit);
    "Magma cudaPackages does not match cudaPackages" =
      cudaSupport
      && (effectiveMagma.cudaPackages.cudaMajorMinorVersion != cudaPackages.cudaMajorMinorVersion);
  };

  # `stdenv' = if cudaSupport then cudaPackages.backendStdenv else stdenv`: the compiler torch
  # is built with, and the one nixpkgs' postInstall strips from torch/include and torch/lib.
  stdenv' = if cudaSupport then cudaPackages.backendStdenv else stdenv;
in
(buildPythonPackage.override { stdenv = stdenv'; }) rec {
  pname = "torch";
  version = pin.torch.version;
  pyproject = true;

  outputs = [ "out" "dev" "lib" "cxxdev" ];
  cudaPropagateToOutput = "cxxdev";

  # callPackage ./src.nix (git-unroll'd submodules): opaque here, one derivation per version.
  src = runCommand "pytorch-source-unrolled-v${version}" { } "";

  patches = [ "clang19-template-warning.patch" ]
    ++ lib.optionals cudaSupport [ "fix-cmake-cuda-toolkit.patch" "nvtx3-hpp-path-fix.patch" ]
    ++ lib.optionals stdenv'.hostPlatform.isLinux [ "pytorch-pr-108847.patch" ];

  # openssl for inductor's code cache, addr2line for the profiler's unwinder, and (PR #446105)
  # the C++ compiler torch.compile runs, written into torch/_inductor/config.py: all three are
  # run-time references a closure scrub must keep.
  postPatch = ''
    substituteInPlace torch/_inductor/codecache.py \
      --replace-fail '"openssl"' '"${lib.getExe' openssl "openssl"}"'
    substituteInPlace torch/csrc/profiler/unwind/unwind.cpp \
      --replace-fail 'addr2line_binary_ = "addr2line"' 'addr2line_binary_ = "${lib.getExe' binutils "addr2line"}"'
    substituteInPlace torch/_inductor/config.py \
      --replace-fail '"clang++" if sys.platform == "darwin" else "g++"' \
      '"${lib.getExe' targetPackages.stdenv.cc "${targetPackages.stdenv.cc.targetPrefix}c++"}"'
  ''
  + lib.optionalString cudaSupport ''
    rm cmake/Modules/FindCUDAToolkit.cmake
  '';

  preConfigure =
    lib.optionalString cudaSupport ''
      export TORCH_CUDA_ARCH_LIST="${gpuTargetString}"
      export CUPTI_INCLUDE_DIR=${lib.getDev cudaPackages.cuda_cupti}/include
      export CUPTI_LIBRARY_DIR=${lib.getLib cudaPackages.cuda_cupti}/lib
    ''
    # torch takes cuDNN whenever the set has one, whatever USE_CUDNN says.
    + lib.optionalString (cudaSupport && cudaPackages ? cudnn) ''
      export CUDNN_INCLUDE_DIR=${lib.getLib cudnn}/include
      export CUDNN_LIB_DIR=${lib.getLib cudnn}/lib
    '';

  dontUseCmakeConfigure = true;
  CMAKE_GENERATOR = "Ninja";
  USE_MKLDNN = setBool mklDnnSupport;
  USE_MKLDNN_CBLAS = setBool mklDnnSupport;
  USE_NNPACK = 1;
  USE_MPS = setBool stdenv'.hostPlatform.isDarwin;
  USE_DISTRIBUTED = setBool true;

  cmakeFlags = [
    (lib.cmakeFeature "CUDAToolkit_VERSION" cudaPackages.cudaMajorMinorVersion)
  ] ++ lib.optionals cudaSupport [
    (lib.cmakeFeature "CMAKE_CUDA_COMPILER_TOOLKIT_VERSION" cudaPackages.cudaMajorMinorVersion)
  ];

  # Runs after preConfigure; setup.py hands MAX_JOBS to CMake (-j), ninjaFlags is never read.
  preBuild = ''
    export MAX_JOBS=$NIX_BUILD_CORES
    ${python.pythonOnBuildForHost.interpreter} setup.py build --cmake-only
    ${cmake}/bin/cmake build
  '';

  # `rec`: an overrideAttrs that changes `version` leaves this one as it was.
  PYTORCH_BUILD_VERSION = version;
  PYTORCH_BUILD_NUMBER = 0;

  USE_NCCL = setBool useSystemNccl;
  USE_SYSTEM_NCCL = USE_NCCL;
  USE_STATIC_NCCL = USE_NCCL;

  nativeBuildInputs = [ cmake which ninja pybind11 pkg-config removeReferencesTo ]
    ++ lib.optionals cudaSupport [ autoAddDriverRunpath cudaPackages.cuda_nvcc ];

  buildInputs = [ blas blas.provider ]
    ++ lib.optionals cudaSupport (
      with cudaPackages;
      [ cuda_cccl cuda_cudart cuda_cupti cuda_nvcc cuda_nvml_dev cuda_nvrtc cuda_nvtx libcublas
        libcufft libcufile libcurand libcusolver libcusparse libcusparse_lt ]
      ++ lib.optionals (cudaPackages ? cudnn) [ cudnn ]
      ++ lib.optionals useSystemNccl [ (lib.getDev nccl) ]
      ++ [ cuda_profiler_api ]
    )
    ++ lib.optionals (cudaSupport || rocmSupport) [ effectiveMagma ]
    ++ lib.optionals stdenv'.hostPlatform.isLinux [ numactl ]
    ++ lib.optionals tritonSupport [ _tritonEffective ];

  dependencies = [ astunparse expecttest filelock fsspec hypothesis jinja2 networkx ninja
    packaging psutil pyyaml requests sympy types-dataclasses typing-extensions ];

  # nixpkgs already strips the build compiler from the headers and libraries.
  postInstall = ''
    find "$out/${python.sitePackages}/torch/include" "$out/${python.sitePackages}/torch/lib" -type f -exec remove-references-to -t ${stdenv'.cc} '{}' +
  '';

  requiredSystemFeatures = [ "big-parallel" ];

  passthru = {
    inherit cudaSupport cudaPackages rocmSupport rocmPackages brokenConditions;
    cudaCapabilities = if cudaSupport then supportedCudaCapabilities else [ ];
    blasProvider = blas.provider;
  };

  meta = {
    description = "PyTorch: Tensors and Dynamic neural networks in Python with strong GPU acceleration";
    license = lib.licenses.bsd3;
    platforms = [ "x86_64-linux" "aarch64-linux" ]
      ++ lib.optionals (!cudaSupport && !rocmSupport) [ "aarch64-darwin" "x86_64-darwin" ];
    broken = builtins.any lib.id (builtins.attrValues brokenConditions);
    brokenConditions = builtins.attrNames brokenConditions;
  };
}
