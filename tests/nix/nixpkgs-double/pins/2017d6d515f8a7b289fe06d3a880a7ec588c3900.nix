# nixpkgs 2017d6d515f8a7b289fe06d3a880a7ec588c3900 (upstream pytorch-2.10-python313's CUDA 13.1
# pin, `final.cudaPackages_13_1`). Not stored by the search tool: torch 2.9.1 and the other
# package facts as at the neighbour 6b516b42 (unverified at this pin; upstream overrides torch
# to 2.10.0 here too); CUDA sets 12.8, 12.9, 13.0, 13.1, aliases assumed.
import ../top-level.nix {
  torch.version = "2.9.1";
  torchvision.version = "0.24.0";
  torchaudio.version = "2.9.1";
  magma = { version = "2.9.0"; clockRateFixed = true; };
  cudaPackages = {
    cudaPackages_12_8 = { version = "12.8.1"; cudnn = "9.13.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
    cudaPackages_12_9 = { version = "12.9.1"; cudnn = "9.13.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
    cudaPackages_13_0 = { version = "13.0.2"; cudnn = "9.13.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
    cudaPackages_13_1 = { version = "13.1.1"; cudnn = "9.13.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
  };
  cudaAliases = { cudaPackages_12 = "cudaPackages_12_9"; cudaPackages_13 = "cudaPackages_13_1"; };
  cudaDefault = "cudaPackages_12_8";
}
