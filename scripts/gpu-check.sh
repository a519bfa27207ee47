#!/usr/bin/env bash
# cudafrag on a real GPU: every bundled workload and GPU program, natively, under
# cudafrag and under cudafrag's arena, with outputs compared and the report's
# counts and peaks summarised in one table.
#
#   scripts/gpu-check.sh --prepare [BUILD_DIR]
#       On the build machine: fill .gpu/ with libcudafrag.so (and the libunwind it
#       loads), the cudafrag command, the workloads from BUILD_DIR (default: build)
#       and the GPU programs compiled with nvcc. BENCH_BEFORE=LIB also copies another
#       build's libcudafrag.so (e.g. main's) for the hook-cost benchmark to time beside
#       this one.
#   scripts/gpu-check.sh [--only REGEX] [--steps N] [--no-bench | --bench-only]
#       On the GPU machine, from the repository root holding .gpu/. Results go to
#       $OUT (default $TMPDIR/cudafrag-gpu-check): table.txt, log.txt, bench.txt and
#       reports.tgz (every report, trace, stdout and stderr). Profiled runs write a
#       trace (CUDAFRAG_TRACE=1): `cudafrag report` replays them on the build machine.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPU_DIR="$ROOT/.gpu"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
MAX_GPU_DIR_KIB=$((40 * 1024))
WORKLOADS="video_pipeline detector_mix stream_async oom_fragment holes"

die() {
    echo "gpu-check: $*" >&2
    exit 1
}

# --- build machine -----------------------------------------------------------------

# Install into a scratch tree so the binaries lose their build-tree run paths; fall
# back to the build tree when the build has no install rules for them.
stage_build() {
    local build=$1 stage=$2
    meson install -C "$build" --no-rebuild --destdir "$stage" >"$stage.log" 2>&1 && return
    echo "gpu-check: meson install failed (see $stage.log); copying from the build tree" >&2
}

copy_built() {
    local build=$1 stage=$2 lib cli wl
    lib=$(find "$stage" -name 'libcudafrag.so' -print -quit 2>/dev/null)
    [ -n "$lib" ] || lib="$build/src/libcudafrag.so"
    [ -e "$lib" ] || die "no libcudafrag.so in $build (run ninja -C $build first)"
    cp -L "$lib" "$GPU_DIR/libcudafrag.so"
    cli=$(find "$stage" -type f -name cudafrag -perm -u+x -print -quit 2>/dev/null)
    [ -n "$cli" ] || cli="$build/src/cli/cudafrag"
    # The command looks for the library one directory above its own.
    mkdir -p "$GPU_DIR/bin"
    [ -x "$cli" ] && cp -L "$cli" "$GPU_DIR/bin/cudafrag"
    for w in $WORKLOADS; do
        wl=$(find "$stage" -type f -name "cudafrag-demo-$w" -print -quit 2>/dev/null)
        [ -n "$wl" ] || wl="$build/tests/workloads/cudafrag-demo-$w"
        [ -x "$wl" ] || die "missing workload $wl"
        cp -L "$wl" "$GPU_DIR/"
    done
}

compile_gpu_programs() {
    local src="$ROOT/tests/gpu"
    [ -x "$NVCC" ] || die "nvcc not found at $NVCC (set NVCC)"
    "$NVCC" -arch=sm_90 -O2 -o "$GPU_DIR/alloc_static" "$src/alloc_static.cu" || die "nvcc failed"
    "$NVCC" -arch=sm_90 -O2 -cudart shared -o "$GPU_DIR/alloc_static_shared" \
        "$src/alloc_static.cu" || die "nvcc failed"
    "$NVCC" -arch=sm_90 -O2 -o "$GPU_DIR/graph_mem" "$src/graph_mem.cu" || die "nvcc failed"
    "$NVCC" -arch=sm_90 -O2 -o "$GPU_DIR/pool_reuse_check" "$src/pool_reuse_check.cu" ||
        die "nvcc failed"
    # The driver program links the toolkit's stub libcuda; the real driver is
    # found by its soname on the GPU machine.
    cc -std=gnu11 -O2 -Wall -Wextra -isystem "$CUDA_HOME/include" -o "$GPU_DIR/vmm_driver" \
        "$src/vmm_driver.c" -L"$CUDA_HOME/lib64/stubs" -lcuda || die "cc failed"
}

prepare() {
    local build=${1:-build}
    case $build in /*) ;; *) build="$ROOT/$build" ;; esac
    [ -d "$build" ] || die "no build directory $build"
    rm -rf "$GPU_DIR"
    mkdir -p "$GPU_DIR"
    local stage
    stage=$(mktemp -d)
    stage_build "$build" "$stage"
    copy_built "$build" "$stage"
    rm -rf "$stage" "$stage.log"
    # cudafrag dlopens libunwind.so.8, which the GPU machine may lack.
    cp -L /usr/lib/x86_64-linux-gnu/libunwind.so.8 "$GPU_DIR/libunwind.so.8" ||
        die "libunwind.so.8 not found"
    # The cudafrag command reads DWARF (libdw, libelf) and traces (libzstd).
    local l
    for l in libdw.so.1 libelf.so.1 libzstd.so.1; do
        cp -L "/usr/lib/x86_64-linux-gnu/$l" "$GPU_DIR/$l" || die "$l not found"
    done
    compile_gpu_programs
    [ -x "$build/bench/hook/bench_hook" ] && cp -L "$build/bench/hook/bench_hook" "$GPU_DIR/"
    [ -x "$build/bench/hook/bench_primitives" ] &&
        cp -L "$build/bench/hook/bench_primitives" "$GPU_DIR/"
    if [ -n "${BENCH_BEFORE:-}" ]; then
        cp -L "$BENCH_BEFORE" "$GPU_DIR/libcudafrag-before.so" || die "no library $BENCH_BEFORE"
    fi
    local kib
    kib=$(du -sk "$GPU_DIR" | cut -f1)
    ls -l "$GPU_DIR"
    [ "$kib" -le "$MAX_GPU_DIR_KIB" ] || die ".gpu is ${kib} KiB, over the 40 MiB limit"
    echo "gpu-check: .gpu ready (${kib} KiB)"
}

# --- GPU machine -------------------------------------------------------------------

ONLY=""
TORCH_STEPS=55

print_versions() {
    echo "== machine"
    timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader ||
        echo "nvidia-smi failed"
    timeout 30 "$NVCC" --version | tail -n 2
    local f
    for f in torch cupy jax; do
        timeout 60 python3 "$ROOT/scripts/framework_versions.py" "$f" || echo "$f: not importable"
    done
}

# run_case NAME MODE PROFILED [VAR=VALUE...] -- COMMAND...
# PROFILED=1 preloads cudafrag with its report going to $REPORTS/NAME.MODE-<pid>;
# PROFILED=cli only sets the report's destination: the command preloads cudafrag.
run_case() {
    local name=$1 mode=$2 profiled=$3
    shift 3
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    # --only matches "name.mode", e.g. "^torch\.no-cache" or "^(video_pipeline|cupy)\.".
    if [ -n "$ONLY" ] && ! [[ $name.$mode =~ $ONLY ]]; then return; fi
    local tag="$name.$mode"
    if [ "$profiled" != 0 ]; then
        envs+=("CUDAFRAG_OUTPUT=$REPORTS/$tag-%p" "CUDAFRAG_STDERR=0" "CUDAFRAG_TRACE=1")
    fi
    if [ "$profiled" = 1 ]; then
        envs+=("LD_PRELOAD=$GPU_DIR/libcudafrag.so")
    fi
    local t0 t1 rc
    t0=$(date +%s.%N)
    timeout "$STEP_TIMEOUT" env "${envs[@]}" "$@" >"$LOGS/$tag.out" 2>"$LOGS/$tag.err"
    rc=$?
    t1=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$rc" "$(awk "BEGIN { print $t1 - $t0 }")" \
        "$profiled" >>"$ROWS"
    printf '%-20s %-18s exit %-3s %s\n' "$name" "$mode" "$rc" \
        "$(grep -m1 -E '^(checksum|final loss|result|OOM)' "$LOGS/$tag.out")"
}

# Native, under cudafrag and under the arena (stream-ordered allocations included).
run_three() {
    local name=$1
    shift
    run_case "$name" native 0 -- "$@"
    run_case "$name" cudafrag 1 -- "$@"
    run_case "$name" arena 1 CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1 -- "$@"
}

run_workloads() {
    local w
    for w in $WORKLOADS; do
        run_three "$w" "$GPU_DIR/cudafrag-demo-$w"
    done
    # The cudafrag command finds the library itself (one directory above it).
    run_case video_pipeline cli cli -- "$GPU_DIR/bin/cudafrag" run -- \
        "$GPU_DIR/cudafrag-demo-video_pipeline"
    run_three alloc_static "$GPU_DIR/alloc_static"
    run_three alloc_static_shared "$GPU_DIR/alloc_static_shared"
    run_case vmm_driver native 0 -- "$GPU_DIR/vmm_driver"
    run_case vmm_driver cudafrag 1 -- "$GPU_DIR/vmm_driver"
    run_case graph_mem native 0 -- "$GPU_DIR/graph_mem"
    run_case graph_mem cudafrag 1 -- "$GPU_DIR/graph_mem"
    # The premise of the pool read cudafrag skips; under cudafrag, its verified reads.
    run_case pool_reuse_check native 0 -- "$GPU_DIR/pool_reuse_check" 20000
    run_case pool_reuse_check cudafrag 1 -- "$GPU_DIR/pool_reuse_check" 20000
}

run_frameworks() {
    local t="$ROOT/tests/gpu/torch_loop.py" steps="--steps=$TORCH_STEPS"
    run_case torch caching 0 -- python3 "$t" "$steps"
    run_case torch caching+cf 1 -- python3 "$t" "$steps"
    run_case torch no-cache 0 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- python3 "$t" "$steps"
    run_case torch no-cache+cf 1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- python3 "$t" "$steps"
    run_case torch no-cache+arena 1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAFRAG_ARENA=1 -- \
        python3 "$t" "$steps"
    run_case torch async 0 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- python3 "$t" "$steps"
    run_case torch async+cf 1 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- \
        python3 "$t" "$steps"
    run_case torch expandable 0 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- \
        python3 "$t" "$steps"
    run_case torch expandable+cf 1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- \
        python3 "$t" "$steps"
    # The Python package with PyTorch: regions against PyTorch's own peaks, the pytest plugin.
    run_case python-face torch 0 PATH="$GPU_DIR/bin:$PATH" PYTHONPATH="$ROOT/python" -- \
        python3 "$ROOT/tests/gpu/torch_python_face.py" "$OUT/python-face"
    # Who owns the memory: the workload under the command, then its report against
    # PyTorch's own figures (the check's "result" line is the row's).
    local own="$REPORTS/torch.owners"
    run_case owners torch 0 -- "$GPU_DIR/bin/cudafrag" run --trace --output "$own" -- \
        python3 "$ROOT/tests/gpu/torch_owners.py" --stats "$own.stats.json"
    run_case owners check 0 -- python3 "$ROOT/tests/gpu/torch_owners.py" \
        --check "$own.json" --stats "$own.stats.json"
    # The report at the first out-of-memory failure (the script runs itself under the command).
    run_case oom torch 0 -- python3 "$ROOT/tests/gpu/torch_oom.py" --cudafrag "$GPU_DIR/bin/cudafrag" \
        --out "$OUT/oom"
    run_case cupy native 0 -- python3 "$ROOT/tests/gpu/cupy_test.py"
    run_case cupy cudafrag 1 -- python3 "$ROOT/tests/gpu/cupy_test.py"
    run_case jax default 0 -- python3 "$ROOT/tests/gpu/jax_test.py"
    # A second native run: tells run-to-run variance of XLA's reductions from cudafrag's effect.
    run_case jax default-again 0 -- python3 "$ROOT/tests/gpu/jax_test.py"
    run_case jax default+cf 1 -- python3 "$ROOT/tests/gpu/jax_test.py"
    run_case jax platform 0 XLA_PYTHON_CLIENT_ALLOCATOR=platform -- \
        python3 "$ROOT/tests/gpu/jax_test.py"
    run_case jax platform+cf 1 XLA_PYTHON_CLIENT_ALLOCATOR=platform -- \
        python3 "$ROOT/tests/gpu/jax_test.py"
}

# Hook cost on the real driver: bench_hook's loops 24 frames deep, without cudafrag
# and preloaded (stacks off, depth 16, each with and without the trace), in a
# shuffled rotation of BENCH_REPS repetitions (bench/hook/rotate.sh: medians,
# quartiles and fastest runs of (with - without) per call), the stream-ordered loop
# the targets are stated for and, with BENCH_SYNC=1, the cudaMalloc loop. With
# .gpu/libcudafrag-before.so (--prepare with BENCH_BEFORE) that library runs too,
# trace on, in the same rotation. First the machine's primitives (TSC read, locked
# operations), which differ between machines.
run_hook_bench() {
    local b="$GPU_DIR/bench_hook" lib="$GPU_DIR/libcudafrag.so" before="$GPU_DIR/libcudafrag-before.so"
    [ -x "$b" ] || { echo "no bench_hook in .gpu"; return; }
    [ -x "$GPU_DIR/bench_primitives" ] && "$GPU_DIR/bench_primitives" | tee "$OUT/bench.txt"
    local t="CUDAFRAG_TRACE=1 CUDAFRAG_JSON=0"
    local cfgs=("native=" "stacks off=LD_PRELOAD=$lib CUDAFRAG_STACK_DEPTH=0"
        "stacks off, trace on=LD_PRELOAD=$lib CUDAFRAG_STACK_DEPTH=0 $t"
        "depth 16=LD_PRELOAD=$lib CUDAFRAG_STACK_DEPTH=16"
        "depth 16, trace on=LD_PRELOAD=$lib CUDAFRAG_STACK_DEPTH=16 $t")
    [ -e "$before" ] && cfgs+=("before: stacks off, trace on=LD_PRELOAD=$before CUDAFRAG_STACK_DEPTH=0 $t"
        "before: depth 16, trace on=LD_PRELOAD=$before CUDAFRAG_STACK_DEPTH=16 $t")
    local loop
    for loop in async $([ "${BENCH_SYNC:-0}" = 1 ] && echo sync); do
        echo "-- $loop loop"
        REPS=${BENCH_REPS:-21} "$ROOT/bench/hook/rotate.sh" "$b" "$loop" "${cfgs[@]}" |
            tee -a "$OUT/bench.txt"
    done
}

# One row per run: outputs compared, counts and peaks from the reports.
print_table() {
    python3 "$ROOT/scripts/gpu_check_table.py" "$ROWS" "$LOGS" "$REPORTS" \
        "$ROOT/tests/workloads/meson.build"
}

check() {
    [ -e "$GPU_DIR/libcudafrag.so" ] || die "no $GPU_DIR/libcudafrag.so: run --prepare on the build machine"
    OUT=${OUT:-${TMPDIR:-/tmp}/cudafrag-gpu-check}
    mkdir -p "$OUT"
    local work
    work=$(mktemp -d)
    REPORTS="$work/reports"
    LOGS="$work/logs"
    ROWS="$work/rows.tsv"
    mkdir -p "$REPORTS" "$LOGS"
    : >"$ROWS"
    export LD_LIBRARY_PATH="$GPU_DIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    run_all 2>&1 | tee "$OUT/log.txt"
    tar czf "$OUT/reports.tgz" -C "$work" reports logs rows.tsv
    rm -rf "$work"
}

BENCH=1
BENCH_ONLY=0

run_all() {
    print_versions
    if [ "$BENCH_ONLY" = 1 ]; then
        run_hook_bench
        return
    fi
    if [ "$BENCH" = 1 ] && [ -z "$ONLY" ]; then
        echo "== hook cost (bench_hook 1000 pairs, 24 frames deep)"
        run_hook_bench
    fi
    echo "== runs (each limited to ${STEP_TIMEOUT}s)"
    run_workloads
    run_frameworks
    echo "== table"
    print_table | tee "$OUT/table.txt"
}

case ${1:-} in
--prepare)
    prepare "${2:-build}"
    ;;
*)
    while [ $# -gt 0 ]; do
        case $1 in
        --only) ONLY=$2; shift 2 ;;
        --steps) TORCH_STEPS=$2; shift 2 ;;
        --no-bench) BENCH=0; shift ;;
        --bench-only) BENCH_ONLY=1; shift ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
        esac
    done
    check
    ;;
esac
