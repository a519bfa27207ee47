#!/usr/bin/env bash
# The arena against PyTorch's allocator settings, on the real GPU: every workload
# of the arena study (docs/arena.md) under each configuration, one run each, side
# by side, and one table: loop time, time against the caching allocator, peak
# memory held / peak live, and whether the output matched.
#
#   scripts/gpu-check.sh --prepare [BUILD_DIR]      (on the build machine: fills .gpu/)
#   scripts/gpu-arena.sh [--only REGEX] [--configs "caching expandable ..."]
#                        [--arena-env "VAR=V ..."] [--quick]
#
# On the GPU machine, from the repository root. Results go to $OUT (default
# $TMPDIR/cudafrag-gpu-arena): table.txt, log.txt, and traces.tgz (the block-level
# traces of the no-caching runs, for `cudafrag replay` offline).
#
# Configurations of the PyTorch workloads:
#   caching      PyTorch's default caching allocator      held = max reserved
#   again        the same, a second time (run-to-run spread; not in the default set)
#   expandable   expandable_segments:True                 held = max reserved
#   async        backend:cudaMallocAsync                  held = max reserved
#   async-trace  the same, profiled with the trace on: the pool's reserved memory
#                read after every allocation, beside the tensors' stream (the
#                ground truth the replay's async-pool model is fitted to); not in
#                the default set
#   raw          no caching, cudaMalloc per tensor, profiled with the trace on:
#                held = cudafrag's exact peak footprint (the memory floor)
#   arena        no caching, cudafrag's arena (CUDAFRAG_ARENA=1): held = peak mapped
# live is PyTorch's max allocated (the raw and arena runs: cudafrag's peak live).
# CUDA C workloads: native, and the arena (CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1).
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU_DIR="$ROOT/.gpu"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
STEP_TIMEOUT=${STEP_TIMEOUT:-180}
TORCH_WORKLOADS=${TORCH_WORKLOADS:-"lm_train cnn_multiscale kv_decode torch_loop"}
C_WORKLOADS=${C_WORKLOADS-"video_pipeline detector_mix stream_async holes"}
ONLY=""
ARENA_ENV=""
CONFIGS="caching expandable async raw arena"
QUICK=0

while [ $# -gt 0 ]; do
    case $1 in
    --only) ONLY=$2; shift 2 ;;
    --arena-env) ARENA_ENV=$2; shift 2 ;;
    --configs) CONFIGS=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "gpu-arena: unknown argument $1" >&2; exit 1 ;;
    esac
done
[ -e "$GPU_DIR/libcudafrag.so" ] || { echo "gpu-arena: run scripts/gpu-check.sh --prepare first" >&2; exit 1; }
OUT=${OUT:-${TMPDIR:-/tmp}/cudafrag-gpu-arena}
mkdir -p "$OUT"
WORK=$(mktemp -d)
mkdir -p "$WORK/reports" "$WORK/logs" "$WORK/traces"
ROWS="$WORK/rows.tsv"
: >"$ROWS"
export LD_LIBRARY_PATH="$GPU_DIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1

# case NAME MODE PROFILED VAR=VALUE... -- COMMAND...
run_one() {
    local name=$1 mode=$2 profiled=$3
    shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    if [ -n "$ONLY" ] && ! [[ $name.$mode =~ $ONLY ]]; then return; fi
    [[ " $CONFIGS native " == *" $mode "* ]] || return 0
    local tag="$name.$mode"
    if [ "$profiled" != 0 ]; then
        envs+=("LD_PRELOAD=$GPU_DIR/libcudafrag.so" "CUDAFRAG_OUTPUT=$WORK/reports/$tag-%p"
            "CUDAFRAG_STDERR=0")
    fi
    local t0 t1 rc
    t0=$(date +%s.%N)
    timeout "$STEP_TIMEOUT" env "${envs[@]}" "$@" >"$WORK/logs/$tag.out" 2>"$WORK/logs/$tag.err"
    rc=$?
    t1=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$rc" "$(awk "BEGIN { print $t1 - $t0 }")" \
        "$profiled" >>"$ROWS"
    printf '%-16s %-11s exit %-3s %s\n' "$name" "$mode" "$rc" \
        "$(grep -m1 -E '^(checksum|final loss|result)' "$WORK/logs/$tag.out")"
    # Kept up to date after every run: a run cut short still leaves its results.
    python3 "$ROOT/scripts/arena_table.py" "$ROWS" "$WORK/logs" "$WORK/reports" >"$OUT/table.txt" 2>&1
    if [ "$mode" = raw ] || [ "$mode" = async-trace ]; then
        cp "$WORK"/reports/"$tag"-*.cftrace "$WORK/traces/" 2>/dev/null
        tar czf "$OUT/traces.tgz" -C "$WORK" traces
    fi
}

# shellcheck disable=SC2206
arena_env=(CUDAFRAG_ARENA=1 CUDAFRAG_TRACE=0 $ARENA_ENV)

run_torch() {
    local w=$1 script=("$ROOT/tests/gpu/$1.py")
    # --quick: about half the steps, for a check that must fit a short slot.
    if [ "$QUICK" = 1 ]; then
        case $w in
        lm_train | cnn_multiscale | torch_loop) script+=(--steps 20) ;;
        kv_decode) script+=(--gen-scale 0.5) ;;
        esac
    fi
    run_one "$w" caching 0 -- python3 "${script[@]}"
    # The caching run again: the run-to-run spread of a workload's output and time.
    run_one "$w" again 0 -- python3 "${script[@]}"
    run_one "$w" expandable 0 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- \
        python3 "${script[@]}"
    run_one "$w" async 0 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- python3 "${script[@]}"
    run_one "$w" async-trace 1 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync CUDAFRAG_TRACE=1 -- \
        python3 "${script[@]}"
    run_one "$w" raw 1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAFRAG_TRACE=1 -- python3 "${script[@]}"
    run_one "$w" arena 1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${arena_env[@]}" -- \
        python3 "${script[@]}"
}

run_c() {
    local w=$1 bin="$GPU_DIR/cudafrag-demo-$1"
    run_one "$w" native 0 -- "$bin"
    run_one "$w" raw 1 CUDAFRAG_TRACE=1 -- "$bin"
    run_one "$w" arena 1 CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1 "${arena_env[@]}" -- "$bin"
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 "$ROOT/scripts/framework_versions.py" torchvision
    for w in $TORCH_WORKLOADS; do run_torch "$w"; done
    for w in $C_WORKLOADS; do run_c "$w"; done
} 2>&1 | tee "$OUT/log.txt"

cat "$OUT/table.txt"
tar czf "$OUT/reports.tgz" --exclude='*.cftrace' -C "$WORK" reports logs rows.tsv
ls -l "$OUT"
rm -rf "$WORK"
