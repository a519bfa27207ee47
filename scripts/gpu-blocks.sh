#!/usr/bin/env bash
# `cudafrag run --blocks` on a real GPU, and the stream-ordered pool probe.
#
#   scripts/gpu-check.sh --prepare [BUILD_DIR]     on the build machine, as for the GPU check
#   scripts/gpu-blocks.sh [--steps N] [--no-probe]  on the GPU machine, from the repository root
#
# PyTorch (tests/gpu/torch_loop.py): the caching allocator twice (its time and
# reserved peak; the second run shows the run-to-run spread), per-tensor cudaMalloc
# without cudafrag (PYTORCH_NO_CUDA_MEMORY_CACHING=1), and `cudafrag run --blocks
# --trace`: same final loss, time against the caching allocator (the goal: within
# 1.1x), the tensors counted by the report and served by the arena, and the trace
# replayed through the `pytorch` models against PyTorch's own reserved peaks
# (default and expandable segments) and the `async-pool` model against the
# cudaMallocAsync backend's pool. JAX (tests/gpu/jax_test.py) and CuPy
# (tests/gpu/cupy_test.py): native against --blocks, same result, the blocks
# counted. Then tests/gpu/async_pool_probe.cu, compiled with nvcc: every scenario
# to async_pool_probe.csv, and its training shape traced and replayed.
#
# Results go to $OUT (default $TMPDIR/cudafrag-gpu-blocks): summary.txt, and every
# stdout, stderr, report, trace and CSV next to it.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU_DIR="$ROOT/.gpu"
CF="$GPU_DIR/bin/cudafrag"
# The command reads DWARF and traces with the libraries carried in .gpu (libdw, libzstd).
export LD_LIBRARY_PATH="$GPU_DIR:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
OUT=${OUT:-${TMPDIR:-/tmp}/cudafrag-gpu-blocks}
STEPS=55
PROBE=1

die() {
    echo "gpu-blocks: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case $1 in
        --steps) STEPS=$2; shift 2 ;;
        --steps=*) STEPS=${1#--steps=}; shift ;;
        --no-probe) PROBE=0; shift ;;
        *) die "unknown argument $1" ;;
    esac
done

[ -x "$CF" ] || die "no $CF: run scripts/gpu-check.sh --prepare on the build machine first"
# The command finds the CuPy hook next to itself, as in the build tree.
mkdir -p "$GPU_DIR/bin/python" "$OUT"
cp "$ROOT/src/cli/python/sitecustomize.py" "$GPU_DIR/bin/python/" || die "no CuPy hook"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

# run TAG [VAR=VALUE...] -- COMMAND...: stdout/stderr to TAG.out/.err, seconds to TAG.time.
run() {
    local tag=$1 envs=() t0 t1 rc
    shift
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    t0=$(date +%s.%N)
    env ${envs[@]+"${envs[@]}"} CUDAFRAG_STDERR=0 "$@" >"$OUT/$tag.out" 2>"$OUT/$tag.err"
    rc=$?
    t1=$(date +%s.%N)
    awk "BEGIN { print $t1 - $t0 }" >"$OUT/$tag.time"
    [ $rc -eq 0 ] || say "$tag: exit $rc (see $OUT/$tag.err)"
    return $rc
}

line() { grep -m1 "^$2" "$OUT/$1.out" | sed "s/^$2 *//"; }
json() { python3 "$ROOT/scripts/json_field.py" "$@"; }

torch_cases() {
    local t="$ROOT/tests/gpu/torch_loop.py" s="--steps=$STEPS"
    run torch-caching -- python3 "$t" "$s"
    run torch-caching-again -- python3 "$t" "$s"
    run torch-nocache -- env PYTORCH_NO_CUDA_MEMORY_CACHING=1 python3 "$t" "$s"
    run torch-expandable -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 "$t" "$s"
    run torch-async -- env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
        "$CF" run --output "$OUT/torch-async" -- python3 "$t" "$s"
    run torch-blocks -- "$CF" run --blocks --trace --output "$OUT/torch-blocks" -- python3 "$t" "$s"
    say "== PyTorch ($STEPS steps)"
    say "blocks line: $(grep -m1 -- '--blocks set' "$OUT/torch-blocks.err")"
    local c b
    c=$(line torch-caching "final loss") b=$(line torch-blocks "final loss")
    say "final loss: caching $c, --blocks $b: $([ "$c" = "$b" ] && echo same || echo DIFFERENT)"
    say "elapsed (s, from the loop): caching $(line torch-caching elapsed), again" \
        "$(line torch-caching-again elapsed), no-cache raw $(line torch-nocache elapsed)," \
        "--blocks $(line torch-blocks elapsed)"
    say "--blocks / caching: $(awk -v b="$(line torch-blocks elapsed)" \
        -v c="$(line torch-caching elapsed)" 'BEGIN { printf "%.3f", b / c }')x (goal: 1.1x)"
    local r="$OUT/torch-blocks.json"
    if [ -f "$r" ]; then
        say "report: allocations $(json "$r" summary.allocs), arena served" \
            "$(json "$r" arena_vs_native.arena.allocs_served), block_capture" \
            "$(json "$r" block_capture)"
    fi
    [ -f "$OUT/torch-blocks.cftrace" ] || return
    "$CF" replay --json --model pytorch --model pytorch:expandable_segments=True \
        --model async-pool --model async-pool:release_threshold=0 "$OUT/torch-blocks.cftrace" \
        >"$OUT/torch-blocks-replay.json" 2>"$OUT/torch-blocks-replay.err" || say "replay failed"
    python3 "$ROOT/scripts/replay_vs_real.py" "$OUT" | tee -a "$SUMMARY"
}

jax_cases() {
    local t="$ROOT/tests/gpu/jax_test.py"
    run jax-platform -- env XLA_PYTHON_CLIENT_ALLOCATOR=platform python3 "$t"
    run jax-blocks -- "$CF" run --blocks --output "$OUT/jax-blocks" -- python3 "$t"
    say "== JAX"
    say "result: platform $(line jax-platform result), --blocks $(line jax-blocks result)"
    [ -f "$OUT/jax-blocks.json" ] && say "report: allocations" \
        "$(json "$OUT/jax-blocks.json" summary.allocs), arena served" \
        "$(json "$OUT/jax-blocks.json" arena_vs_native.arena.allocs_served)"
}

cupy_cases() {
    local t="$ROOT/tests/gpu/cupy_test.py"
    run cupy-native -- python3 "$t"
    run cupy-blocks -- "$CF" run --blocks --output "$OUT/cupy-blocks" -- python3 "$t"
    say "== CuPy"
    say "checksum: native $(line cupy-native checksum), --blocks $(line cupy-blocks checksum)"
    say "hook: $(grep -m1 "CuPy's memory pools" "$OUT/cupy-blocks.err")"
    say "pool: native $(grep -m1 '^cupy' "$OUT/cupy-native.out"); --blocks" \
        "$(grep -m1 '^cupy' "$OUT/cupy-blocks.out")"
    [ -f "$OUT/cupy-blocks.json" ] && say "report: allocations" \
        "$(json "$OUT/cupy-blocks.json" summary.allocs), arena served" \
        "$(json "$OUT/cupy-blocks.json" arena_vs_native.arena.allocs_served)"
}

probe_cases() {
    [ -x "$NVCC" ] || { say "no nvcc at $NVCC: probe skipped"; return; }
    "$NVCC" -arch=sm_90 -O2 -o "$OUT/async_pool_probe" "$ROOT/tests/gpu/async_pool_probe.cu" ||
        { say "probe: nvcc failed"; return; }
    run probe -- "$OUT/async_pool_probe"
    cp "$OUT/probe.out" "$OUT/async_pool_probe.csv"
    run probe-training -- "$CF" run --trace --output "$OUT/probe-training" -- \
        "$OUT/async_pool_probe" --scenario training
    say "== stream-ordered pool probe: $OUT/async_pool_probe.csv ($(wc -l <"$OUT/async_pool_probe.csv") lines)"
    say "training shape, real pool reserved high:" \
        "$(awk -F, '$1 == "training" && $10 > m { m = $10 } END { print m }' "$OUT/probe-training.out") B"
    "$CF" replay --model async-pool --model async-pool:release_threshold=0 \
        "$OUT/probe-training.cftrace" | tee -a "$SUMMARY"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
    sed 's/^/gpu: /' | tee -a "$SUMMARY"
torch_cases
jax_cases
cupy_cases
[ "$PROBE" = 1 ] && probe_cases
say "results in $OUT"
