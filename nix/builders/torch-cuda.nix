# The parametric builder of every CUDA PyTorch variant: nixpkgs' torch for one SM and one CPU
# ISA. The thin recipes in .flox/pkgs/ call it; everything else lives here once.
{
  pkgs, # the toolkit's pinned nixpkgs (../nixpkgs.nix)
  pname, # the variant's name, which is also its file name
  pythonPackages, # "python313Packages"
  attribute, # "torch"
  package, # the catalog's package name: "pytorch"
  version, # the catalog's version: the pin's, or a `sources` override's
  gpu, # { name = "sm90"; capability = "9.0"; cudnn = true; }
  isa, # { name = "avx512"; flags = [ ... ]; disables = [ ... ]; platform = "x86_64-linux"; }
  description,
  maxJobs ? 32, # compile jobs; more exhausts memory on big hosts (nvcc takes GiBs a job)
}:

let
  inherit (pkgs) lib;
  sh = import ./common.nix lib;
  pinned = sh.checkVersion {
    inherit pname package version pythonPackages attribute;
    drv = pkgs.${pythonPackages}.${attribute};
  };
  # cuDNN >= 9.12 refuses capabilities below 7.5, and torch takes cuDNN from its cudaPackages
  # whenever the set has one (`cudaPackages ? cudnn`), whatever USE_CUDNN says: an SM without
  # cuDNN gets a set without it.
  cudaPackages =
    if gpu.cudnn then pkgs.cudaPackages else builtins.removeAttrs pkgs.cudaPackages [ "cudnn" ];
in
(pinned.override {
  cudaSupport = true;
  gpuTargets = [ gpu.capability ];
  inherit cudaPackages;
}).overrideAttrs
  (old: {
    inherit pname;

    # blasProvider stays nixpkgs' (a derivation); gpuArch and cpuISA name the variant.
    passthru = (old.passthru or { }) // {
      gpuArch = gpu.name;
      cpuISA = isa.name;
    };

    preConfigure =
      old.preConfigure
      + sh.cpuFlags isa.flags
      + sh.disable (lib.optionals (!gpu.cudnn) [ "CUDNN" ] ++ isa.disables);

    preBuild = old.preBuild + sh.maxJobsCap maxJobs;

    # No closure scrub of our own: nixpkgs' postInstall already strips the build compiler
    # (cudaPackages.backendStdenv's) from torch/include and torch/lib, and the compiler that
    # postPatch writes into torch/_inductor/config.py, and binutils' addr2line, are needed
    # at run time (torch.compile, the profiler).

    meta = (old.meta or { }) // {
      inherit description;
      platforms = [ isa.platform ];
    };
  })
