#!/usr/bin/env bash
# Test-only tools that are not Python packages of the project itself.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 -m pip install -q zizmor
