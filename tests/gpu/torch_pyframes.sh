#!/usr/bin/env bash
# torch_pyframes.sh [OUT]: on the GPU machine, from the repository root holding
# .gpu/ (scripts/gpu-check.sh --prepare): tests/gpu/torch_loop.py profiled without
# PyTorch's caching allocator and with it, Python frames read from memory (the
# default) and, for comparison, through the C API (CUDAFRAG_PYTHON_MEMORY=0; no
# frames for calls that released the GIL); once more with torch's own files
# folded (CUDAFRAG_SKIP_FRAMES='*/torch/*') so that sites are shown at the
# model's lines. Checks the sites against torch_loop.py's lines
# (check_torch_pyframes.py) and prints each run's loop time.
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-${TMPDIR:-/tmp}/cudafrag-torch-pyframes}
LIB=$ROOT/.gpu/libcudafrag.so
STEPS=${STEPS:-20}
[ -e "$LIB" ] || { echo "no $LIB: run scripts/gpu-check.sh --prepare first" >&2; exit 1; }
mkdir -p "$OUT"
rc=0
run() { # tag strict env...
    local tag=$1 strict=$2
    shift 2
    env "$@" CUDAFRAG_OUTPUT="$OUT/$tag" CUDAFRAG_STDERR=0 CUDAFRAG_TOP=1000 LD_PRELOAD="$LIB" \
        python3 "$ROOT/tests/gpu/torch_loop.py" --steps="$STEPS" >"$OUT/$tag.out" 2>"$OUT/$tag.err" ||
        { echo "$tag: torch_loop.py failed (see $OUT/$tag.err)"; rc=1; return; }
    echo "== $tag: $(grep -E '^(final loss|elapsed)' "$OUT/$tag.out" | tr '\n' ' ')"
    python3 "$ROOT/tests/gpu/check_torch_pyframes.py" "$OUT/$tag.json" $strict || rc=1
}
python3 -c 'import sys; print("python", sys.version)'
env -u LD_PRELOAD python3 "$ROOT/tests/gpu/torch_loop.py" --steps="$STEPS" | grep -E '^(final|elapsed)'
run no-cache --strict PYTORCH_NO_CUDA_MEMORY_CACHING=1
run no-cache-api "" PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDAFRAG_PYTHON_MEMORY=0
run no-cache-folded --strict PYTORCH_NO_CUDA_MEMORY_CACHING=1 "CUDAFRAG_SKIP_FRAMES=*/torch/*"
run caching ""
run caching-folded "" "CUDAFRAG_SKIP_FRAMES=*/torch/*"
echo "reports in $OUT (text: *.txt); top sites of the folded run:"
sed -n '/top call sites by peak/,/^$/p' "$OUT/no-cache-folded.txt" | head -40
exit $rc
