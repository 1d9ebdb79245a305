"""Make a virtual environment with pip in it, from nothing but Python's standard library.

    python3 .ci/make-venv.py [DIR]     # DIR defaults to .venv; run again, it is kept

Debian's and Ubuntu's python3 refuse `pip install` outside a virtual environment (PEP 668),
and without their python3-venv package `python3 -m venv` stops for want of ensurepip. The venv
module itself is in the standard library everywhere: this makes the environment without pip
and, where ensurepip is missing, installs pip from its wheel on PyPI, checked against the
sha256 PyPI publishes for it. No root, no apt, no curl.

Everything it says goes to stderr: the README's quick start pipes a command after it, whose
standard output must be only its own (the matrix JSON).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import urllib.request
import venv
from pathlib import Path
from urllib.parse import urljoin

PIP_JSON = "https://pypi.org/pypi/pip/json"


def has_pip(python: Path) -> bool:
    done = subprocess.run(
        [str(python), "-m", "pip", "--version"], capture_output=True, text=True, check=False
    )
    return done.returncode == 0


def has_ensurepip() -> bool:
    try:
        import ensurepip  # noqa: F401
    except ImportError:
        return False
    return True


def pip_wheel(into: Path) -> Path:
    """The newest pip wheel from PyPI, its sha256 checked; the file it was saved to."""
    with urllib.request.urlopen(PIP_JSON, timeout=60) as answer:
        release = json.load(answer)
    wheel = next(f for f in release["urls"] if f["packagetype"] == "bdist_wheel")
    url = urljoin(PIP_JSON, wheel["url"])
    with urllib.request.urlopen(url, timeout=300) as answer:  # noqa: S310 - from PyPI's answer
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
        raise SystemExit(f"venv: {url}: the download does not match PyPI's sha256; not used")
    path: Path = into / str(wheel["filename"])
    path.write_bytes(data)
    return path


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else ".venv")
    python = target / "bin" / "python"
    if python.exists() and has_pip(python):
        print(f"venv: {target} is ready", file=sys.stderr)
        return 0
    with_pip = has_ensurepip()
    venv.EnvBuilder(with_pip=with_pip).create(target)
    if not with_pip:
        # pip runs from its own wheel: `python pip-X.whl/pip install pip-X.whl`.
        with tempfile.TemporaryDirectory() as scratch:
            wheel = pip_wheel(Path(scratch))
            subprocess.run(
                [str(python), f"{wheel}/pip", "install", "--quiet", "--no-index", str(wheel)],
                check=True,
                stdout=sys.stderr,
            )
    print(f"venv: made {target} ({'ensurepip' if with_pip else 'pip from PyPI'})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
