"""A fake `flox` for the build tests: records its argv, leaves `result-VARIANT` links like
`flox build`, and on demand fails (transient, compile error), hangs, floods its log or fills
the disk first. FAKE_FLOX_FAIL=VARIANT=MODE,...; FAKE_FLOX_FLOOD=LINESxBYTES; FAKE_FLOX_FILL=PATH.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

FAKE_FLOX = """\
#!{python}
import json, os, sys, time
from pathlib import Path

argv = sys.argv[1:]
log = Path(os.environ["FAKE_FLOX_LOG"])
with log.open("a") as handle:
    handle.write(json.dumps(argv) + "\\n")
variant = argv[1]
calls = sum(1 for line in log.read_text().splitlines() if json.loads(line) == argv)
plan = dict(item.split("=", 1) for item in os.environ.get("FAKE_FLOX_FAIL", "").split(",") if item)
mode = plan.get(variant, "ok")
print("building " + variant, flush=True)
if mode == "hang":
    Path(os.environ["FAKE_FLOX_HANGING"]).write_text(variant)
    time.sleep(3600)
if mode == "transient" or (mode == "transient-once" and calls == 1):
    print("error: unable to download 'https://cache.example/nar/x.nar.xz': HTTP error 503")
    sys.exit(1)
if mode == "compile":
    print("aten/src/ATen/native/Foo.cpp:12:5: error: 'bar' was not declared in this scope")
    print("ninja: build stopped: subcommand failed.")
    sys.exit(1)
lines, width = (int(n) for n in os.environ.get("FAKE_FLOX_FLOOD", "0x0").split("x"))
for _ in range(lines):  # a log of LINES lines of WIDTH bytes
    sys.stdout.write("y" * width + "\\n")
if os.environ.get("FAKE_FLOX_FILL"):  # the disk fills up while the build runs
    fd = os.open(os.environ["FAKE_FLOX_FILL"], os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\\0" * 65536)
    except OSError:
        pass
store = Path(os.environ["FAKE_FLOX_STORE"]) / ("0000-" + variant)
store.mkdir(parents=True, exist_ok=True)
link = Path.cwd() / ("result-" + variant)
if link.is_symlink():
    link.unlink()
link.symlink_to(store)
print("built " + variant)
"""


def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has the fake flox first; its argv log is FAKE_FLOX_LOG."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    flox = bindir / "flox"
    flox.write_text(FAKE_FLOX.format(python=sys.executable), encoding="utf-8")
    flox.chmod(flox.stat().st_mode | stat.S_IXUSR)
    return {
        "PATH": os.pathsep.join([str(bindir), os.environ.get("PATH", "")]),
        "FAKE_FLOX_LOG": str(tmp_path / "flox-argv.log"),
        "FAKE_FLOX_STORE": str(tmp_path / "store"),
    }
