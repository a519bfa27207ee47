#!/usr/bin/env bash
# cudafrag on two GPUs of one host: the two-device CUDA C program and a PyTorch DDP
# job (torchrun, 2 ranks, NCCL), natively, under cudafrag and under its arena, with
# one report per rank, `cudafrag merge` of the ranks, outputs compared and one table.
#
#   scripts/gpu-check-multi.sh --prepare [BUILD_DIR]
#       On the build machine: scripts/gpu-check.sh --prepare (libcudafrag.so, the
#       cudafrag command and what they load, into .gpu/), plus tests/gpu/multi_gpu.cu
#       compiled with nvcc (static and shared cudart) and tests/gpu/peer_kernel.cu.
#   scripts/gpu-check-multi.sh [--only REGEX] [--steps N]
#       On the two-GPU machine, from the repository root holding .gpu/. Results go to
#       $OUT (default $TMPDIR/cudafrag-gpu-check-multi): table.txt, log.txt and
#       reports.tgz (every report, trace, merge, stdout and stderr).
#   scripts/gpu-check-multi.sh --sim [BUILD_DIR]
#       Anywhere, without a GPU: the same CUDA C runs on two simulated devices, with
#       the build tree's library and command (multi_gpu as built by the tests, and,
#       when nvcc is present, built by nvcc with -cudart shared). DDP is skipped.
#
# Multicast objects stay off in every program: NCCL_NVLS_ENABLE=0,
# TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are exported
# below, before anything runs, and multi_gpu.cu never calls cuMulticastCreate.
set -u -o pipefail

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU_DIR="$ROOT/.gpu"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
DDP_STEPS=30
ONLY=""
SIM=0

die() {
    echo "gpu-check-multi: $*" >&2
    exit 1
}

# --- build machine -----------------------------------------------------------------

compile_multi_gpu() {
    local out=$1 src="$ROOT/tests/gpu/multi_gpu.cu"
    [ -x "$NVCC" ] || die "nvcc not found at $NVCC (set NVCC)"
    # Host code only: no -arch needed, but keep the single-GPU check's target.
    "$NVCC" -arch=sm_90 -O2 -o "$out/multi_gpu" "$src" -ldl || die "nvcc failed"
    "$NVCC" -arch=sm_90 -O2 -cudart shared -o "$out/multi_gpu_shared" "$src" -ldl ||
        die "nvcc failed"
    # Kernels reading the other GPU's cudaMalloc memory: real GPUs only.
    "$NVCC" -arch=sm_90 -O2 -o "$out/peer_kernel" "$ROOT/tests/gpu/peer_kernel.cu" ||
        die "nvcc failed"
}

prepare() {
    "$ROOT/scripts/gpu-check.sh" --prepare "${1:-build}" || die "gpu-check.sh --prepare failed"
    compile_multi_gpu "$GPU_DIR"
    ls -l "$GPU_DIR/multi_gpu" "$GPU_DIR/multi_gpu_shared" "$GPU_DIR/peer_kernel"
    echo "gpu-check-multi: .gpu ready ($(du -sk "$GPU_DIR" | cut -f1) KiB)"
}

# --- the runs (GPU machine, or --sim) ------------------------------------------------

print_versions() {
    echo "== machine"
    if [ "$SIM" = 1 ]; then
        echo "simulated device: SIMCUDA_DEVICES=$SIMCUDA_DEVICES SIMCUDA_MEM=$SIMCUDA_MEM"
        return
    fi
    timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader ||
        echo "nvidia-smi failed"
    timeout 30 nvidia-smi topo -m || true
    timeout 30 "$NVCC" --version | tail -n 2
    timeout 60 python3 "$ROOT/scripts/framework_versions.py" torch-nccl || echo "torch: not importable"
}

# profile_env TAG PROFILED: the variables of a profiled run (the rank goes in the
# name). PROFILED=1 preloads the library; PROFILED=cli leaves that to the cudafrag
# command the run starts with.
profile_env() {
    PENV=("CUDAFRAG_OUTPUT=$REPORTS/$1-rank%r-%p" "CUDAFRAG_STDERR=0" "CUDAFRAG_TRACE=1"
        "CUDAFRAG_TOP=100")
    [ "$2" = 1 ] && PENV+=("LD_PRELOAD=$LIB")
}

selected() {
    # --only matches "name.mode", e.g. "^ddp\." or "\.arena$".
    [ -z "$ONLY" ] || [[ $1 =~ $ONLY ]]
}

row() { # NAME MODE RC SECONDS PROFILED RANKS
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$ROWS"
    printf '%-22s %-14s exit %-3s %6.1fs %s\n' "$1" "$2" "$3" "$4" \
        "$(grep -h -m1 -E '^(checksum|final loss)' "$LOGS/$1.$2".*out 2>/dev/null | head -n 2 | tr '\n' ' ')"
}

now() { date +%s.%N; }
secs() { awk "BEGIN { print $2 - $1 }"; }

# run_one NAME MODE PROFILED [VAR=VALUE...] -- COMMAND...: one process.
run_one() {
    local name=$1 mode=$2 profiled=$3
    shift 3
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    selected "$name.$mode" || return 0
    local tag="$name.$mode" t0 rc
    if [ "$profiled" != 0 ]; then profile_env "$tag" "$profiled"; envs+=("${PENV[@]}"); fi
    t0=$(now)
    timeout "$STEP_TIMEOUT" env "${envs[@]}" "$@" >"$LOGS/$tag.out" 2>"$LOGS/$tag.err"
    rc=$?
    row "$name" "$mode" "$rc" "$(secs "$t0" "$(now)")" "$profiled" 1
}

# run_ranks NAME MODE PROFILED [VAR=VALUE...] -- COMMAND...: two processes at once,
# RANK and LOCAL_RANK 0 and 1, as a launcher starts them; the worse exit status.
run_ranks() {
    local name=$1 mode=$2 profiled=$3
    shift 3
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    selected "$name.$mode" || return 0
    local tag="$name.$mode" t0 rc=0 r s pids=()
    if [ "$profiled" != 0 ]; then profile_env "$tag" "$profiled"; envs+=("${PENV[@]}"); fi
    t0=$(now)
    for r in 0 1; do
        timeout "$STEP_TIMEOUT" env "${envs[@]}" RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 \
            LOCAL_WORLD_SIZE=2 "$@" >"$LOGS/$tag.rank$r.out" 2>"$LOGS/$tag.rank$r.err" &
        pids+=($!)
    done
    for r in 0 1; do
        wait "${pids[$r]}"
        s=$?
        [ "$s" -gt "$rc" ] && rc=$s
    done
    row "$name" "$mode" "$rc" "$(secs "$t0" "$(now)")" "$profiled" 2
    [ "$profiled" != 0 ] && merge_ranks "$tag"
}

# The reports of a job's ranks, merged: text and JSON next to the reports.
merge_ranks() {
    local tag=$1 files
    files=$(ls "$REPORTS/$tag"-rank*.json 2>/dev/null)
    [ -n "$files" ] || return 0
    # shellcheck disable=SC2086
    "$CLI" merge $files >"$REPORTS/$tag.merge.txt" 2>>"$LOGS/$tag.err"
    # shellcheck disable=SC2086
    "$CLI" merge --json $files >"$REPORTS/$tag.merge.json" 2>>"$LOGS/$tag.err"
    sed -n '/^peak: /p' "$REPORTS/$tag.merge.txt"
}

run_cuda_c() {
    local b
    for b in $MULTI_BINS; do
        local prog="$BIN_DIR/$b"
        [ -x "$prog" ] || { echo "no $prog: skipped"; continue; }
        run_one "$b" native 0 -- "$prog" all
        run_one "$b" cudafrag 1 -- "$prog" all
        run_one "$b" arena 1 CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1 -- "$prog" all
        # The cudafrag command preloads the library itself.
        run_one "$b" cli cli -- "$CLI" run -- "$prog" all
        run_ranks "$b-ranks" native 0 -- "$prog" rank
        run_ranks "$b-ranks" cudafrag 1 -- "$prog" rank
        run_ranks "$b-ranks" arena 1 CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1 -- "$prog" rank
    done
    # Peer access to cudaMalloc memory from kernels: does the arena keep it working?
    if [ -x "$BIN_DIR/peer_kernel" ]; then
        run_one peer_kernel native 0 -- "$BIN_DIR/peer_kernel"
        run_one peer_kernel cudafrag 1 -- "$BIN_DIR/peer_kernel"
        run_one peer_kernel arena 1 CUDAFRAG_ARENA=1 -- "$BIN_DIR/peer_kernel"
    else
        echo "peer_kernel: skipped (real GPUs only)"
    fi
}

# torchrun starts the ranks: preloaded into torchrun, cudafrag follows it into
# every worker (CUDAFRAG_CHILDREN, on by default); the launcher itself allocates
# nothing and writes no report. Each worker names its report by its RANK.
run_ddp() {
    local t="$ROOT/tests/gpu/ddp_loop.py" steps="--steps=$DDP_STEPS"
    local launch=(python3 -m torch.distributed.run --standalone --nproc_per_node=2)
    run_ddp_case caching 0 -- "${launch[@]}" "$t" "$steps"
    run_ddp_case caching+cf 1 -- "${launch[@]}" "$t" "$steps"
    run_ddp_case no-cache 0 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- "${launch[@]}" "$t" "$steps"
    run_ddp_case no-cache+cf 1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- "${launch[@]}" "$t" "$steps"
    # Block-level capture: `cudafrag run --blocks` turns the caching allocator off
    # (PYTORCH_NO_CUDA_MEMORY_CACHING=1) and serves every tensor from the arena.
    run_ddp_case blocks cli -- "$CLI" run --blocks -- "${launch[@]}" "$t" "$steps"
}

run_ddp_case() {
    local mode=$1 profiled=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    selected "ddp.$mode" || return 0
    local tag="ddp.$mode" t0 rc
    if [ "$profiled" != 0 ]; then profile_env "$tag" "$profiled"; envs+=("${PENV[@]}"); fi
    t0=$(now)
    timeout "$STEP_TIMEOUT" env "${envs[@]}" "$@" >"$LOGS/$tag.out" 2>"$LOGS/$tag.err"
    rc=$?
    row ddp "$mode" "$rc" "$(secs "$t0" "$(now)")" "$profiled" 2
    if [ "$profiled" != 0 ]; then
        merge_ranks "$tag"
        nccl_sites "$tag" | tee "$REPORTS/$tag.nccl.txt"
    fi
}

# NCCL's call sites in each rank's report: what PyTorch's snapshot does not list.
nccl_sites() {
    python3 "$ROOT/scripts/nccl_sites.py" "$REPORTS" "$1"
}

# One row per run: outputs compared, per-rank counts, peaks and NCCL's share.
print_table() {
    python3 "$ROOT/scripts/gpu_check_multi_table.py" "$ROWS" "$LOGS" "$REPORTS"
}

run_all() {
    print_versions
    echo "== runs (each limited to ${STEP_TIMEOUT}s)"
    run_cuda_c
    if [ "$SIM" = 1 ]; then
        echo "ddp: skipped on the simulated device (needs two GPUs and PyTorch)"
    else
        run_ddp
    fi
    echo "== table"
    print_table | tee "$OUT/table.txt"
}

check() {
    mkdir -p "$OUT"
    local work
    work=$(mktemp -d)
    REPORTS="$work/reports"
    LOGS="$work/logs"
    ROWS="$work/rows.tsv"
    mkdir -p "$REPORTS" "$LOGS"
    : >"$ROWS"
    run_all 2>&1 | tee "$OUT/log.txt"
    tar czf "$OUT/reports.tgz" -C "$work" reports logs rows.tsv
    rm -rf "$work"
    echo "results in $OUT"
}

# On the two GPUs: everything from .gpu/.
setup_gpu() {
    [ -e "$GPU_DIR/libcudafrag.so" ] || die "no $GPU_DIR/libcudafrag.so: run --prepare on the build machine"
    [ -x "$GPU_DIR/multi_gpu" ] || die "no $GPU_DIR/multi_gpu: run --prepare on the build machine"
    local n
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    [ "${n:-0}" -ge 2 ] || die "this check needs two GPUs (nvidia-smi lists ${n:-0})"
    LIB="$GPU_DIR/libcudafrag.so"
    CLI="$GPU_DIR/bin/cudafrag"
    BIN_DIR="$GPU_DIR"
    MULTI_BINS="multi_gpu multi_gpu_shared"
    OUT=${OUT:-${TMPDIR:-/tmp}/cudafrag-gpu-check-multi}
    export LD_LIBRARY_PATH="$GPU_DIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# On the simulated device: the build tree, two devices.
setup_sim() {
    local build=${1:-build}
    case $build in /*) ;; *) build="$ROOT/$build" ;; esac
    LIB="$build/src/libcudafrag.so"
    CLI="$build/src/cli/cudafrag"
    if [ ! -e "$LIB" ] || [ ! -x "$CLI" ]; then
        die "no $LIB or $CLI (run ninja -C $build first)"
    fi
    BIN_DIR=$(mktemp -d)
    trap 'rm -rf "$BIN_DIR"' EXIT
    MULTI_BINS=""
    if [ -x "$build/tests/multidev/multidev_multi_gpu" ]; then
        ln -s "$build/tests/multidev/multidev_multi_gpu" "$BIN_DIR/multi_gpu_sim"
        MULTI_BINS="multi_gpu_sim"
    fi
    # nvcc's build runs here only with the shared runtime: the simulated device
    # provides libcudart.so.13, not NVIDIA's static runtime.
    if [ -x "$NVCC" ] && "$NVCC" -O2 -cudart shared -o "$BIN_DIR/multi_gpu_shared" \
        "$ROOT/tests/gpu/multi_gpu.cu" -ldl >"$BIN_DIR/nvcc.log" 2>&1; then
        MULTI_BINS="$MULTI_BINS multi_gpu_shared"
    else
        echo "gpu-check-multi: no nvcc build (nvcc missing or failed); the test build only" >&2
    fi
    [ -n "$MULTI_BINS" ] || die "no multi_gpu program: build $build first"
    export SIMCUDA_DEVICES=2 SIMCUDA_MEM=${SIMCUDA_MEM:-4G}
    export LD_LIBRARY_PATH="$build/simcuda/driver:$build/simcuda/runtime"
    OUT=${OUT:-${TMPDIR:-/tmp}/cudafrag-gpu-check-multi-sim}
}

case ${1:-} in
--prepare)
    prepare "${2:-build}"
    ;;
*)
    BUILD_ARG=build
    while [ $# -gt 0 ]; do
        case $1 in
        --only) ONLY=$2; shift 2 ;;
        --steps) DDP_STEPS=$2; shift 2 ;;
        --sim)
            SIM=1
            shift
            if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then BUILD_ARG=$1; shift; fi
            ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
        esac
    done
    if [ "$SIM" = 1 ]; then setup_sim "$BUILD_ARG"; else setup_gpu; fi
    check
    ;;
esac
