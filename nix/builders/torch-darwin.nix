# The Apple Silicon PyTorch: nixpkgs' darwin torch, which builds the MPS (Metal) backend
# (USE_MPS follows the host platform), with Accelerate's vecLib for BLAS.
{
  pkgs, # the branch's pinned nixpkgs (../nixpkgs.nix)
  pname,
  pythonPackages,
  attribute,
  package, # the catalog's package name: "pytorch"
  version, # the catalog's version: the pin's, or a `sources` override's
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
pinned.overrideAttrs (old: {
  inherit pname;

  passthru = (old.passthru or { }) // {
    gpuArch = "mps";
    cpuISA = null;
  };

  preConfigure = (old.preConfigure or "") + ''
    export BLAS=vecLib
  '';

  preBuild = old.preBuild + sh.maxJobsCap maxJobs;

  meta = (old.meta or { }) // {
    inherit description;
    platforms = [ "aarch64-darwin" ];
  };
})
