"""`python3 -m venv ARGS` on a provisioned runner (the python3 hook): a venv made with
`--system-site-packages` sees the runner's own packages, ACT_RUNNER_SITE (pip, setuptools and
ci-tools' dependencies, made once per test session by tests/act/harness.py), and needs no
ensurepip, since the runner's pip is among them. Any other venv is made as asked."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

# The name of the file a venv's site-packages reads the runner's packages folder from.
PTH = "_act_runner_site.pth"


def main(argv: list[str]) -> int:
    site = os.environ.get("ACT_RUNNER_SITE", "")
    folders = [a for a in argv if not a.startswith("-")]
    if "--system-site-packages" not in argv or not site or len(folders) != 1:
        os.execv(sys.executable, [sys.executable, "-m", "venv", *argv])  # noqa: S606
    options = [a for a in argv if a.startswith("-") and a not in {"--upgrade-deps"}]
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", *options, *folders])
    if made.returncode != 0:
        return made.returncode
    # The venv's own purelib, as its interpreter will compute it: same version, new prefix.
    purelib = sysconfig.get_path("purelib", vars={"base": folders[0], "platbase": folders[0]})
    Path(purelib).mkdir(parents=True, exist_ok=True)
    (Path(purelib) / PTH).write_text(site + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
