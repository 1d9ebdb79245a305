# The parametric builder of every package that builds against PyTorch (TorchVision,
# TorchAudio). `torch` is the sibling recipe of the same name, imported by the caller: the
# dependent links that one derivation instead of compiling a second torch.
{
  pkgs, # the toolkit's pinned nixpkgs (../nixpkgs.nix)
  pname,
  pythonPackages,
  attribute, # "torchvision"
  package, # the catalog's package name: "torchvision"
  version, # the catalog's version: the pin's, or a `sources` override's
  torch, # the sibling PyTorch recipe's derivation
  gpu ? null, # as for torch-cuda.nix; null for CPU and Apple builds
  isa, # null for the Apple build, else { name; flags; disables; platform; }
  platform,
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
(pinned.override { inherit torch; }).overrideAttrs (old: {
  inherit pname;

  passthru = (old.passthru or { }) // {
    inherit torch;
    inherit (torch.passthru) gpuArch cpuISA;
  };

  preConfigure =
    (old.preConfigure or "")
    + lib.optionalString (isa != null) (sh.cpuFlags isa.flags)
    # nixpkgs derives the arch list from torch.passthru.cudaCapabilities, which is
    # config.cudaCapabilities intersected with torch's supported list: empty for an SM that
    # list lacks (11.0 at 2.9.1). The variant's SM, explicitly.
    + lib.optionalString (gpu != null) ''
      export TORCH_CUDA_ARCH_LIST=${sh.q gpu.capability}
      export FORCE_CUDA=1
    '';

  preBuild = (old.preBuild or "") + sh.maxJobsCap maxJobs;

  meta = (old.meta or { }) // {
    inherit description;
    platforms = [ platform ];
  };
})
