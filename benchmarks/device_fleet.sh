#!/usr/bin/env bash
# Issue 18, item 7, on a GPU machine against that machine's own CUDA torch:
# * the routed checks of an sm90 variant: `ci-tools matrix` routes its test leg to the sm90
#   test runner (scope gpu), and `ci-tools test` runs every check there;
# * the static proofs of an sm100 and an sm120 variant (`ci-tools test --static`: cuobjdump's
#   SASS per SM and objdump's ISA scan of libtorch_cpu.so; nothing of the build runs).
# A pip-installed torch is a fat binary: the "exactly one SM" proofs (sass, arch-list) must
# fail on all three and name the SMs they found; the ISA scan judges the wheel's own code.
#
#   OUT=/some/folder benchmarks/device_fleet.sh [PYTHON]      (from the repository root)
#
# PYTHON (default python3) has the CUDA torch; ci-tools runs under it too, so ci-tools'
# dependencies (ruamel.yaml + ruamel.yaml.clib, tenacity, jinja2, requests) must import
# there: missing ones can come as wheels in $WHEELS (default .devrun/whl), installed into a
# private folder. cuobjdump on PATH (or under $CUDA_HOME/bin) and binutils' objdump and nm.
# Records, logs, the matrix and the report go to $OUT (default: a new temporary folder).
set -u
python=${1:-python3}
branch=${FLEET_BRANCH:-cuda-13_0}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out/records"

# shellcheck source=benchmarks/device_prelude.sh
. "$(dirname "${BASH_SOURCE[0]}")/device_prelude.sh"
use_checkout_and_wheels "$python" || exit 2
if ! command -v cuobjdump >/dev/null && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump" ]; then
    export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
fi

echo "== host"
"$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "arch list", torch.cuda.get_arch_list())'
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | head -4
echo "cuobjdump: $(command -v cuobjdump || echo 'not on PATH')  objdump: $(command -v objdump || echo 'not on PATH')"
echo "cpu flags: $(grep -o -w -E 'avx512f|avx512_bf16|avx512_vnni|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"

suffix=${branch#cuda-}  # cuda-13_0 -> 13_0: the variant name's form of the branch
routed="pytorch-python313-cuda${suffix}-sm90-avx512"
static=("pytorch-python313-cuda${suffix}-sm100-avx512" "pytorch-python313-cuda${suffix}-sm120-avx512")

echo "== ci-tools matrix: the routes (build leg -> test leg)"
"$python" -m ci_tools matrix --branch "$branch" --group none >"$out/matrix.json" || exit 2
"$python" - "$out/matrix.json" "$routed" "${static[@]}" <<'PY'
import json, sys
rows = {row["packages"][0]: row for row in json.load(open(sys.argv[1]))["include"]}
for name in sys.argv[2:]:
    row = rows[name]
    print(f"{name}: build on {row['runs_on'][-1]}, test {row['test']} on "
          f"{row['test_runs_on'][-1]}" + (f" ({row['test_reason']})" if row["test_reason"] else ""))
PY

status=0
run() {
    local variant=$1; shift
    echo "== ci-tools test $* $variant (branch $branch)"
    local started
    started=$(date +%s)
    "$python" -m ci_tools test --python "$python" --branch "$branch" "$@" "$variant" \
        --results "$out/records" 2>&1 | tee "$out/$variant.log"
    local code=${PIPESTATUS[0]}
    echo "exit $code after $(($(date +%s) - started)) s"
    if [ "$code" -ge 2 ]; then status=2; fi
}
run "$routed"
for variant in "${static[@]}"; do run "$variant" --static; done

echo "== ci-tools report (proof coverage first)"
"$python" -m ci_tools report "$out/records" --json "$out/summary.json" | tee "$out/report.md" \
    || status=2
echo "records, logs, matrix and report: $out"
exit "$status"
