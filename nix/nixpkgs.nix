# One toolkit's nixpkgs, as a recipe asks for it: the pinned revision through the recipe's
# door, its config (CUDA is unfree; `allowBroken` only where the catalog says the toolkit
# needs it), the overlay that makes `cudaPackages` the toolkit's set, the catalog's source
# overrides (./sources.nix) and the toolkit's named overlays (./overlays/NAME.nix), in that
# order. Everything here comes from catalog.yaml through the generated recipe.
{
  fetchPinnedNixpkgs,
  rev,
  sha256 ? null,
  cudaPackages ? null, # "cudaPackages_12_9", or null for CPU and Apple builds
  cudaCapabilities ? [ ], # the variant's one SM: every CUDA library (MAGMA, NCCL) targets it
  allowBroken ? false,
  sources ? { }, # { torch = { version = "2.10.0"; hash = "sha256-..."; }; }
  overlays ? [ ], # names of ./overlays/*.nix
}:

let
  cudaSupport = cudaPackages != null;
in
import (fetchPinnedNixpkgs { inherit rev sha256; }) {
  config = {
    allowUnfree = true; # CUDA, cuDNN and cuBLAS are unfree
    inherit allowBroken cudaSupport;
  }
  // (if cudaCapabilities == [ ] then { } else { inherit cudaCapabilities; });
  overlays =
    (if cudaSupport then [ (final: prev: { cudaPackages = final.${cudaPackages}; }) ] else [ ])
    ++ [ (import ./sources.nix sources) ]
    ++ map (name: import (./overlays + "/${name}.nix")) overlays;
}
