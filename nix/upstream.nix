# Where each Python package's upstream source lives on GitHub, keyed by its nixpkgs attribute:
# what ./sources.nix fetches for a catalog `sources` override. The hash covers the submodules
# where fetchSubmodules is set (`nix-prefetch-github --fetch-submodules`).
# ci_tools/catalog/upstream.py says the same to the catalog's messages (a test keeps them equal).
{
  torch = { owner = "pytorch"; repo = "pytorch"; fetchSubmodules = true; };
  torchvision = { owner = "pytorch"; repo = "vision"; fetchSubmodules = false; };
  torchaudio = { owner = "pytorch"; repo = "audio"; fetchSubmodules = false; };
}
