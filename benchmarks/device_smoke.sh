#!/usr/bin/env bash
# The smoke checks on a GPU machine, against that machine's own CUDA torch (issue 13, item 5):
# an sm90 CUDA variant, a CPU avx512bf16 and a CPU avx512vnni variant, each through
# `ci-tools test --python`, then `ci-tools report` over the three records.
#
#   benchmarks/device_smoke.sh [PYTHON]        (run from the repository root)
#
# PYTHON (default python3) is the interpreter with the CUDA torch; ci-tools runs under it too.
# Missing ci-tools dependencies can come as wheels in $WHEELS (default .devrun/whl): they are
# installed into a private folder, nothing else is touched. Records and logs go to
# $SMOKE_OUT (default $OUT when set, else a new temporary folder). A pip-installed torch is a
# fat binary, so its sm90 `sass` and `arch-list` checks must fail, naming what they found.
set -u
python=${1:-python3}
branch=${SMOKE_BRANCH:-cuda-13_0}
out=${SMOKE_OUT:-${OUT:-$(mktemp -d)}}
mkdir -p "$out"

# shellcheck source=benchmarks/device_prelude.sh
. "$(dirname "${BASH_SOURCE[0]}")/device_prelude.sh"
use_checkout_and_wheels "$python" || exit 2

echo "== host"
"$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "arch list", torch.cuda.get_arch_list())'
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | head -4
echo "cuobjdump: $(command -v cuobjdump || echo "not on PATH (CUDA_HOME=${CUDA_HOME:-unset})")"
echo "cpu flags: $(grep -o -w -E 'avx512f|avx512_bf16|avx512_vnni|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"

# cuda-13_0 -> cuda13_0: the variant name's form of the branch.
variants=(
    "pytorch-python313-cuda${branch#cuda-}-sm90-avx512"
    pytorch-python313-cpu-avx512bf16
    pytorch-python313-cpu-avx512vnni
)
status=0
for variant in "${variants[@]}"; do
    echo "== ci-tools test $variant (branch $branch)"
    started=$(date +%s)
    "$python" -m ci_tools test --python "$python" --branch "$branch" "$variant" \
        --results "$out" 2>&1 | tee "$out/$variant.log"
    code=${PIPESTATUS[0]}
    echo "exit $code after $(($(date +%s) - started)) s"
    if [ "$code" -ge 2 ]; then status=2; fi
done

echo "== ci-tools report"
"$python" -m ci_tools report "$out" --json "$out/summary.json" || status=2
echo "records and logs: $out"
exit "$status"
