# nixpkgs fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3 (catalog branch main, CUDA 12.8). Not stored by
# the search tool: torch 2.8.0 / torchvision 0.23.0 are catalog.yaml's (upstream main's
# recipes at this pin); the rules are those read at the neighbour 6b516b42 (torch 2.9.1);
# CUDA sets 12.8 and 12.9 only (no CUDA 13 at this older pin; unverified), cuDNN 9.8
# (unverified; below 9.12, so its capability rule does not fire).
import ../top-level.nix {
  torch.version = "2.8.0";
  torchvision.version = "0.23.0";
  torchaudio.version = "2.8.0";
  magma.version = "2.9.0";
  cudaPackages = {
    cudaPackages_12_8 = { version = "12.8.1"; cudnn = "9.8.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
    cudaPackages_12_9 = { version = "12.9.1"; cudnn = "9.8.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
  };
  cudaAliases = { cudaPackages_12 = "cudaPackages_12_9"; };
  cudaDefault = "cudaPackages_12_8";
}
