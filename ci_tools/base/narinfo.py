"""What Nix says of store paths' bytes: NAR hash, NAR size, references (`nix path-info --json`),
and the NAR hash recomputed from the bytes on disk (`nix-hash`).

`nix path-info --json` changed shape between Nix versions, and both are read here:
- Nix 2.4 to 2.18 print a list of objects, each with its `path` (Debian's nix-bin 2.8 does);
  Nix 2.19 and later print an object keyed by store path (Nix 2.19 release notes: "nix
  path-info --json now returns a JSON map rather than JSON list").
- `narHash` is SRI (`sha256-<base64>`) since Nix 2.4; Nix 2.3 and earlier printed
  `sha256:<52 nix32 digits>`; 64 hex digits are read too. Every form becomes one digest.
The registered hash is what the store's database says; `nar_hash_on_disk` hashes the files
themselves, so a path changed after it was registered shows up there.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_tools.base import proc
from ci_tools.base.errors import InputError

NIX = ("nix", "--extra-experimental-features", "nix-command")
TIMEOUT = 1800.0
# Nix's base32 alphabet (libutil/hash.cc `base32Chars`): no e, o, u, t.
NIX32 = "0123456789abcdfghijklmnpqrsvwxyz"
_SRI = re.compile(r"sha256-([A-Za-z0-9+/]{43}=)")
_NIX32 = re.compile(rf"sha256:([{NIX32}]{{52}})")
_HEX = re.compile(r"(?:sha256:)?([0-9a-f]{64})")
_NAME_VERSION = re.compile(r"-(?=[0-9])")


class NarInfoError(Exception):
    """Nix's answer was not what this module reads (said without quoting secrets)."""


@dataclass(frozen=True, kw_only=True)
class PathInfo:
    path: str
    nar_hash: str  # SRI, sha256-<base64>
    nar_size: int
    references: tuple[str, ...] = ()

    @property
    def hex_digest(self) -> str:
        return sri_to_hex(self.nar_hash)


def from_nix32(text: str) -> bytes:
    """Nix's base32 to bytes (libutil/hash.cc `parseHash`: least significant digit first)."""
    size = len(text) * 5 // 8
    out = bytearray(size)
    for n, char in enumerate(reversed(text)):
        digit = NIX32.index(char)
        bit = n * 5
        i, j = divmod(bit, 8)
        out[i] |= (digit << j) & 0xFF
        if i + 1 < size:
            out[i + 1] |= digit >> (8 - j)
        elif digit >> (8 - j):
            raise ValueError("nix32 digits overflow the hash")
    return bytes(out)


def normalise(text: str) -> str | None:
    """A sha256 NAR hash in any form Nix prints, as SRI; None when it is none of them."""
    if found := _SRI.fullmatch(text):
        digest = base64.b64decode(found.group(1))
    elif found := _NIX32.fullmatch(text):
        try:
            digest = from_nix32(found.group(1))
        except ValueError:
            return None
    elif found := _HEX.fullmatch(text):
        digest = bytes.fromhex(found.group(1))
    else:
        return None
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def sri_to_hex(sri: str) -> str:
    found = _SRI.fullmatch(sri)
    if found is None:
        raise ValueError(f"{sri[:80]!r} is not a sha256 SRI hash")
    return base64.b64decode(found.group(1)).hex()


def parse(text: str) -> list[PathInfo]:
    """`nix path-info --json`'s answer, either shape, in the order Nix gave."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NarInfoError(f"nix path-info printed no JSON ({exc.msg})") from None
    if isinstance(data, dict):
        items = [({**v, "path": k} if isinstance(v, dict) else v) for k, v in data.items()]
    elif isinstance(data, list):
        items = data
    else:
        raise NarInfoError("nix path-info printed neither a list nor an object")
    return [_info(item) for item in items]


def _info(item: object) -> PathInfo:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        raise NarInfoError("nix path-info: an entry without its path")
    path = item["path"]
    if item.get("valid") is False or "narHash" not in item:
        raise NarInfoError(f"{path} is not valid in this store")
    nar_hash = normalise(str(item["narHash"]))
    size = item.get("narSize")
    if nar_hash is None or type(size) is not int or size < 0:
        raise NarInfoError(f"{path}: nix path-info gave no sha256 narHash and narSize")
    refs = item.get("references") or []
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise NarInfoError(f"{path}: references is not a list of store paths")
    return PathInfo(path=path, nar_hash=nar_hash, nar_size=size, references=tuple(refs))


def path_info(
    paths: Sequence[str], env: Mapping[str, str], *, recursive: bool = False
) -> list[PathInfo]:
    """What the store's database says of `paths` (their closure with `recursive`). Raises
    NarInfoError when Nix cannot tell. The caller checks the paths are store paths."""
    argv = [*NIX, "path-info", "--json", *(["--recursive"] if recursive else []), "--", *paths]
    result = proc.run(argv, env=env, timeout=TIMEOUT)
    if not result.ok:
        said = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise NarInfoError(f"nix path-info failed: {said[:300]}")
    return parse(result.stdout)


def one(path: str, env: Mapping[str, str]) -> PathInfo:
    found = [info for info in path_info([path], env) if info.path == path]
    if not found:
        raise NarInfoError(f"{path}: nix path-info did not answer for it")
    return found[0]


def nar_hash_on_disk(path: str, env: Mapping[str, str]) -> str:
    """The sha256 of the path's NAR serialisation, from the files as they are now (nix-hash(1):
    "computes the cryptographic hash of the contents of each path", serialised as a NAR, the
    same bytes `nix-store --dump` writes), as SRI."""
    if proc.which("nix-hash", env) is None:
        raise InputError("`nix-hash` was not found on PATH: install Nix, or Debian's nix-bin")
    result = proc.run(["nix-hash", "--type", "sha256", "--", path], env=env, timeout=TIMEOUT)
    sri = normalise(result.stdout.strip()) if result.ok else None
    if sri is None:
        said = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise NarInfoError(f"nix-hash {path} failed: {said[:300]}")
    return sri


def name_and_version(path: str) -> tuple[str, str]:
    """A store path's name and version as builtins.parseDrvName splits them: the version
    starts at the first dash followed by a digit (`python3-3.13.1` is python3, 3.13.1)."""
    entry = path.rstrip("/").rsplit("/", 1)[-1]
    name = entry.split("-", 1)[1] if "-" in entry else entry
    found = _NAME_VERSION.search(name)
    if found is None:
        return name, ""
    return name[: found.start()], name[found.end() :]
