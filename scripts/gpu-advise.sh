#!/usr/bin/env bash
# `cudafrag advise` against the real allocator, on a machine with an NVIDIA GPU
# and PyTorch.
#
#   scripts/gpu-check.sh --prepare [BUILD_DIR]     on the build machine, as for the GPU check
#   scripts/gpu-advise.sh [--steps N]               on the GPU machine, from the repository root
#
# For each of two training loops (tests/gpu/torch_loop.py: a transformer with
# variable sequence lengths; tests/gpu/lm_train.py: a language model with a 50k
# vocabulary), the loop runs under `cudafrag run --blocks --trace`, `cudafrag
# advise --json` reads the trace, and the loop then runs natively (no cudafrag)
# twice: with PyTorch's defaults and with the advised PYTORCH_CUDA_ALLOC_CONF.
# Each loop prints torch.cuda.max_memory_reserved() at its end. The table says,
# per loop and setting, the peak reserved advise predicted, the one PyTorch
# reported, and the error. Both native runs are made whatever the advice (with
# "keep", the advised setting is the defaults: the row says so). Then the same
# for JAX loops (tests/gpu/jax_advise.py), where JAX is importable.
#
# Results go to $OUT (default $TMPDIR/cudafrag-gpu-advise): table.txt, and every
# stdout, stderr, trace and advice next to it.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU_DIR="$ROOT/.gpu"
CF="$GPU_DIR/bin/cudafrag"
export LD_LIBRARY_PATH="$GPU_DIR:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OUT=${OUT:-${TMPDIR:-/tmp}/cudafrag-gpu-advise}
STEPS=40

die() {
    echo "gpu-advise: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case $1 in
        --steps) STEPS=$2; shift 2 ;;
        --steps=*) STEPS=${1#--steps=}; shift ;;
        *) die "unknown argument $1" ;;
    esac
done

[ -x "$CF" ] || die "no $CF: run scripts/gpu-check.sh --prepare on the build machine first"
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
    die "PyTorch with CUDA is not importable"
mkdir -p "$GPU_DIR/bin/python" "$OUT"
cp "$ROOT/src/cli/python/sitecustomize.py" "$GPU_DIR/bin/python/" || die "no CuPy hook"
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING

json() { python3 "$ROOT/scripts/json_field.py" "$@"; }
reserved() { grep -m1 '^max_memory_reserved ' "$OUT/$1.out" | awk '{ print $2 }'; }

TABLE="$OUT/table.txt"
printf '%-10s %-58s %16s %16s %8s\n' loop setting predicted real error | tee "$TABLE"

# row LOOP SETTING PREDICTED TAG: one line of the table from the native run TAG.
row() {
    local real
    real=$(reserved "$4")
    if [ -z "$real" ]; then
        printf '%-10s %-58s %16s %16s %8s\n' "$1" "$2" "$3" "failed" "-" | tee -a "$TABLE"
        return
    fi
    printf '%-10s %-58s %16s %16s %8s\n' "$1" "$2" "$3" "$real" \
        "$(awk "BEGIN { printf \"%+.1f%%\", ($3 / $real - 1) * 100 }")" | tee -a "$TABLE"
}

# loop NAME SCRIPT: traced under --blocks, advised, then native with each setting.
loop() {
    local name=$1 script=$2 adv conf line own_peak rec_peak
    "$CF" run --blocks --trace --output "$OUT/$name" -- python3 "$script" --steps "$STEPS" \
        >"$OUT/$name-blocks.out" 2>"$OUT/$name-blocks.err" ||
        { echo "$name: the --blocks run failed (see $OUT/$name-blocks.err)"; return; }
    adv="$OUT/$name.advice.json"
    "$CF" advise --json "$OUT/$name.cftrace" >"$adv" 2>"$OUT/$name.advice.err" ||
        { echo "$name: advise failed (see $OUT/$name.advice.err)"; return; }
    "$CF" advise "$OUT/$name.cftrace" >"$OUT/$name.advice.txt" 2>/dev/null
    own_peak=$(json "$adv" devices.0.own.peak_reserved_bytes)
    conf=$(json --default '' "$adv" devices.0.recommended.conf)
    rec_peak=$(json --default '' "$adv" devices.0.recommended.peak_reserved_bytes)
    line=$(json "$adv" devices.0.advice)

    python3 "$script" --steps "$STEPS" >"$OUT/$name-default.out" 2>"$OUT/$name-default.err"
    row "$name" "defaults (your setting)" "$own_peak" "$name-default"
    if [ -z "$rec_peak" ]; then
        echo "$name: no setting fits ($line)" | tee -a "$TABLE"
        return
    fi
    if [ -z "$conf" ]; then
        row "$name" "advised: $line, defaults" "$rec_peak" "$name-default"
        return
    fi
    env PYTORCH_CUDA_ALLOC_CONF="$conf" python3 "$script" --steps "$STEPS" \
        >"$OUT/$name-advised.out" 2>"$OUT/$name-advised.err"
    row "$name" "advised ($line): $conf" "$rec_peak" "$name-advised"
}

loop torch_loop "$ROOT/tests/gpu/torch_loop.py"
loop lm_train "$ROOT/tests/gpu/lm_train.py"
# JAX: the xla-bfc model against XLA's pool (tests/gpu/jax_advise.py says how).
if python3 -c 'import jax' 2>/dev/null; then
    python3 "$ROOT/tests/gpu/jax_advise.py" "$CF" "$OUT" --steps "$STEPS" | tee -a "$TABLE"
else
    echo "jax: not importable, not run" | tee -a "$TABLE"
fi
echo "results in $OUT"
