"""Preflight of a self-hosted runner: now `ci-tools preflight` (ci_tools/build/runner_check.py).

A thin caller kept while the workflows still run this path; it goes once they call
`ci-tools preflight` themselves.
"""

from __future__ import annotations

import sys

from ci_tools.cli import main

if __name__ == "__main__":
    sys.exit(main(["preflight", *sys.argv[1:]]))
