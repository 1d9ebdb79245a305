# The nixpkgs door of the recipes, for tests: same signature as nix/fetch-nixpkgs.nix
# (`{ rev; sha256 ? null; }` -> something `import` turns into the nixpkgs function). Returns
# the double of that revision; a revision the double does not model is refused, as is a
# sha256 that is not a Nix hash (builtins.fetchTarball would refuse it too).
{ rev, sha256 ? null }:
let
  pins = {
    fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3 = ./pins/fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3.nix;
    "6a030d535719c5190187c4cec156f335e95e3211" = ./pins/6a030d535719c5190187c4cec156f335e95e3211.nix;
    "0182a361324364ae3f436a63005877674cf45efb" = ./pins/0182a361324364ae3f436a63005877674cf45efb.nix;
    "2017d6d515f8a7b289fe06d3a880a7ec588c3900" = ./pins/2017d6d515f8a7b289fe06d3a880a7ec588c3900.nix;
  };
  sriOrBase32 = "(sha256-[A-Za-z0-9+/]{43}=|[0-9a-df-np-sv-z]{52})";
in
if !(pins ? ${rev}) then
  throw "nixpkgs double: unknown nixpkgs revision ${rev}; it models ${builtins.concatStringsSep ", " (builtins.attrNames pins)}"
else if sha256 != null && builtins.match sriOrBase32 sha256 == null then
  throw "nixpkgs double: sha256 \"${sha256}\" for nixpkgs ${rev} is not a Nix sha256 hash"
else
  pins.${rev}
