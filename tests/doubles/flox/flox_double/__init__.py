"""The flox double's modules. Every rule names the flox source it models; all of them were read
at flox/flox commit 6536dac28dab945560ce1a6652fe77415ae66800 (2026-08-21), `FLOX_COMMIT` below."""

FLOX_COMMIT = "6536dac28dab945560ce1a6652fe77415ae66800"
