# nixpkgs 6a030d535719c5190187c4cec156f335e95e3211 (catalog branches cuda-12_9, cuda-13_0;
# upstream's CPU, darwin and CUDA 13.0 pin). Not stored by the search tool: facts read at the
# neighbour 6b516b42 (torch/source/default.nix: torch 2.9.1) and from issue 9 item 1
# (torchvision 0.24.0 at this pin; cuDNN 9.13 in cudaPackages_12_9, item 2). The CUDA sets: 12.8,
# 12.9 and 13.0 with the alias cudaPackages_13 (upstream's pytorch-2.10-python313 recipes use
# `final.cudaPackages_13` at this revision); no 13.1 (upstream takes 13.1 from 2017d6d).
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
