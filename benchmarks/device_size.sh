#!/usr/bin/env bash
# The size table of issue 21 on a GPU machine, from that machine's own PyPI CUDA torch:
# benchmarks/bench_size.py reads every fat binary of the installation and projects, per SM,
# libtorch_cuda*.so, the torch package and the whole install (torch and what it requires) of a
# build for that SM alone; --cuobjdump checks the parser's cubin count per SM against CUDA's
# cuobjdump.
#
#   benchmarks/device_size.sh [PYTHON]        (run from the repository root)
#
# PYTHON (default python3) is the interpreter with the CUDA torch. It needs nothing beyond the
# standard library and this checkout. The table and the JSON go to $SIZE_OUT (default $OUT
# when set, else a new temporary folder): size.txt, size.json.
set -u
python=${1:-python3}
out=${SIZE_OUT:-${OUT:-$(mktemp -d)}}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"

{
    echo "== host"
    "$python" -c 'import sys, importlib.metadata as m; print("python", sys.version.split()[0], "torch", m.version("torch"))'
    nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | head -4
    echo "cuobjdump: $(command -v cuobjdump || echo "not on PATH")"
    echo "== bench_size"
} 2>&1 | tee "$out/size.txt"
started=$(date +%s)
"$python" benchmarks/bench_size.py --json "$out/size.json" --cuobjdump 2>&1 | tee -a "$out/size.txt"
status=${PIPESTATUS[0]}
echo "exit $status after $(($(date +%s) - started)) s; table and JSON in $out" | tee -a "$out/size.txt"
exit "$status"
