# nixpkgs 0182a361324364ae3f436a63005877674cf45efb (upstream pytorch-2.10-python313's CUDA 12.8 and
# 12.9 pin; issue 9 item 1: still torch 2.9.1). Not stored by the search tool: the package
# facts are those read at the neighbour 6b516b42 (torch 2.9.1); the CUDA sets are assumed
# equal to 6a030d5's (12.8, 12.9, 13.0 and cudaPackages_13; no 13.1), unverified.
import ../top-level.nix {
  torch.version = "2.9.1";
  torchvision.version = "0.24.0";
  torchaudio.version = "2.9.1";
  magma.version = "2.9.0";
  cudaPackages = {
    cudaPackages_12_8 = { version = "12.8.1"; cudnn = "9.13.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
    cudaPackages_12_9 = { version = "12.9.1"; cudnn = "9.13.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
    cudaPackages_13_0 = { version = "13.0.2"; cudnn = "9.13.0"; defaultCapabilities = [ "7.5" "8.0" "8.6" "8.9" "9.0" "10.0" "12.0" ]; };
  };
  cudaAliases = { cudaPackages_12 = "cudaPackages_12_9"; cudaPackages_13 = "cudaPackages_13_0"; };
  cudaDefault = "cudaPackages_12_8";
}
