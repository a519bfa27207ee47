#!/usr/bin/env bash
# The arena's conformance test (tests/intercept/conformance.c) on a real GPU: the
# same bad and edge-case calls natively, with the profiler, with the arena
# (synchronous, stream-ordered, cuMemAlloc fallback), with NVIDIA's shared and
# static runtime; every return code and last-error value must be identical.
#
#   scripts/gpu-conformance.sh --prepare [BUILD_DIR]
#       On the build machine (CUDA toolkit in $CUDA_HOME, default /usr/local/cuda):
#       fill .gpu-conformance/ with libcudafrag.so, the libunwind it loads and the
#       program built against the toolkit's runtime (shared and static).
#   scripts/gpu-conformance.sh
#       On the GPU machine, from the repository root holding .gpu-conformance/.
#       Prints each program's output and the differences; exit status 0 when all
#       runs are identical.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="$ROOT/.gpu-conformance"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

die() {
    echo "gpu-conformance: $*" >&2
    exit 1
}

prepare() {
    local build=${1:-build} src="$ROOT/tests/intercept/conformance.c"
    case $build in /*) ;; *) build="$ROOT/$build" ;; esac
    [ -e "$build/src/libcudafrag.so" ] || die "no libcudafrag.so in $build (run ninja first)"
    rm -rf "$DIR"
    mkdir -p "$DIR"
    cp -L "$build/src/libcudafrag.so" "$DIR/libcudafrag.so"
    cp -L /usr/lib/x86_64-linux-gnu/libunwind.so.8 "$DIR/" || die "libunwind.so.8 not found"
    local cflags=(-std=gnu11 -O2 -Wall -Wextra -isystem "$CUDA_HOME/include")
    # libcuda from the toolkit's stubs: the real driver is found by its soname.
    cc "${cflags[@]}" -o "$DIR/conformance_shared" "$src" -L"$CUDA_HOME/lib64" -lcudart \
        -L"$CUDA_HOME/lib64/stubs" -lcuda -Wl,-rpath,"$CUDA_HOME/lib64" ||
        die "cc (shared runtime) failed"
    cc "${cflags[@]}" -o "$DIR/conformance_static" "$src" -L"$CUDA_HOME/lib64" \
        -lcudart_static -L"$CUDA_HOME/lib64/stubs" -lcuda -ldl -lpthread -lrt ||
        die "cc (static runtime) failed"
    cp "$ROOT/tests/intercept/conformance.sh" "$DIR/"
    ls -l "$DIR"
}

run() {
    [ -d "$DIR" ] || die "no $DIR: run --prepare on the build machine first"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    local status=0 p
    for p in conformance_shared conformance_static; do
        echo "== $p"
        # 4096T: beyond any GPU's virtual address space, so the fallback run
        # really uses cuMemAlloc chunks.
        FALLBACK_RESERVE=4096T LD_LIBRARY_PATH="$DIR:$CUDA_HOME/lib64:${LD_LIBRARY_PATH:-}" \
            sh "$DIR/conformance.sh" "$DIR/$p" "$DIR/libcudafrag.so" || status=1
    done
    echo "gpu-conformance: $([ $status -eq 0 ] && echo identical || echo DIFFERENCES)"
    return $status
}

case ${1:-} in
--prepare) prepare "${2:-build}" ;;
"") run ;;
*) die "usage: $0 [--prepare [BUILD_DIR]]" ;;
esac
