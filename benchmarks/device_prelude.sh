# shellcheck shell=bash
# Sourced by the benchmarks/device_*.sh scripts that run ci-tools on the GPU machine, from the
# repository root; not a script of its own.
#
# use_checkout_and_wheels PYTHON: puts this checkout on PYTHONPATH, and with it the ci-tools
# dependencies PYTHON lacks where they come as wheels in $WHEELS (default .devrun/whl:
# ruamel.yaml, ruamel.yaml.clib, tenacity), installed into a private folder so that nothing of
# PYTHON's own is touched (the GPU machine reaches no package index: --no-index). Returns 2
# where the wheels do not install.
use_checkout_and_wheels() {
    local python=$1 wheels=${WHEELS:-.devrun/whl} site=/tmp/ci-tools-site
    if compgen -G "$wheels/*.whl" >/dev/null; then
        "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --target "$site" "$wheels"/*.whl || return 2
        export PYTHONPATH="$PWD:$site${PYTHONPATH:+:$PYTHONPATH}"
    else
        export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
    fi
}
