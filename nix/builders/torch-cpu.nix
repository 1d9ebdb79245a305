# The parametric builder of every CPU-only PyTorch variant: no CUDA, nixpkgs' BLAS (OpenBLAS),
# oneDNN (MKLDNN) unless the ISA cannot carry it.
{
  pkgs, # the branch's pinned nixpkgs (../nixpkgs.nix)
  pname,
  pythonPackages,
  attribute,
  package, # the catalog's package name: "pytorch"
  version, # the catalog's version: the pin's, or a `sources` override's
  isa, # { name = "avx2"; flags = [ ... ]; disables = [ ... ]; platform = "x86_64-linux"; }
  description,
  maxJobs ? 32,
}:

let
  inherit (pkgs) lib;
  sh = import ./common.nix lib;
  pinned = sh.checkVersion {
    inherit pname package version pythonPackages attribute;
    drv = pkgs.${pythonPackages}.${attribute};
  };
in
(pinned.override {
  cudaSupport = false;
  mklDnnSupport = !(lib.elem "MKLDNN" isa.disables);
}).overrideAttrs
  (old: {
    inherit pname;

    passthru = (old.passthru or { }) // {
      gpuArch = null;
      cpuISA = isa.name;
    };

    preConfigure =
      (old.preConfigure or "")
      + ''
        export USE_CUDA=0
        export BLAS=OpenBLAS
      ''
      + sh.cpuFlags isa.flags
      + sh.disable isa.disables;

    preBuild = old.preBuild + sh.maxJobsCap maxJobs;

    meta = (old.meta or { }) // {
      inherit description;
      platforms = [ isa.platform ];
    };
  })
