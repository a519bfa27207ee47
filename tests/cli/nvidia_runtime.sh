#!/bin/sh
# Usage: nvidia_runtime.sh CUDAFRAG STATIC_PROG RPATH_PROG
# `cudafrag run --sim` of programs that bring NVIDIA's own CUDA runtime, which the
# simulated device cannot serve: the program's result is unchanged, the simulated
# driver says why once, and where cudafrag sees the failed calls (the shared
# runtime), the report has a finding naming the error instead of "none".
set -u
cudafrag=$1 static=$2 rpath=$3
[ -x "$static" ] || { echo "NVIDIA's CUDA runtime is not in the toolkit: skipped"; exit 77; }
. "$(dirname "$0")/../lib.sh"
scratch
export CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT="$dir/r-%p"

for prog in "$static" "$rpath"; do
    name=$(basename "$prog")
    "$cudafrag" run --sim -- "$prog" >"$dir/$name.out" 2>"$dir/$name.err"; rc=$?
    [ $rc -eq 4 ] || fail "$name: status $rc, want 4 (every cudaMalloc fails)"
    [ "$(grep -c "simcuda: this program uses NVIDIA's CUDA runtime" "$dir/$name.err")" -eq 1 ] ||
        fail "$name: no single simcuda message: $(cat "$dir/$name.err")"
done
# Linked statically, the runtime's cudaMalloc is the program's own: cudafrag sees
# only the driver, which is never asked to allocate, so no report is written.
report=$(grep -l "program   $rpath" "$dir"/r-*.txt) || fail "no report of the RPATH program"
grep -q "\[high\] allocation-failures: 4 of 4 cudaMalloc calls failed with cudaErrorCallRequiresNewerDriver" \
    "$report" || fail "no allocation-failures finding: $(sed -n '/-- findings/,$p' "$report")"
grep -q "carries NVIDIA's own runtime" "$report" || fail "the finding does not say why"
exit 0
