#!/bin/sh
# Usage: odd_path.sh CUDAFRAG LIBCUDAFRAG LIBCUDA LIBCUDART PROG
# cudafrag installed under a path with a space and a colon, which LD_PRELOAD and
# LD_LIBRARY_PATH cannot carry: `cudafrag run --sim` must still profile PROG
# (four cudaMalloc calls through the simulated runtime).
set -u
cudafrag=$1 lib=$2 libcuda=$3 libcudart=$4 prog=$5
. "$(dirname "$0")/../lib.sh"
scratch
# The same layout as the build tree, which is where cudafrag looks.
top="$dir/cuda frag:1"
mkdir -p "$top/src/cli" "$top/simcuda/driver" "$top/simcuda/runtime" "$dir/tmp" || exit 1
cp "$cudafrag" "$top/src/cli/" && cp "$lib" "$top/src/libcudafrag.so" &&
    cp "$libcuda" "$top/simcuda/driver/libcuda.so.1" &&
    cp "$libcudart" "$top/simcuda/runtime/libcudart.so.13" || fail "cannot copy the build"
export TMPDIR="$dir/tmp" CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT="$dir/r"
unset LD_LIBRARY_PATH

"$top/src/cli/cudafrag" run --sim -- "$prog" >"$dir/out" 2>"$dir/err"; rc=$?
[ $rc -eq 0 ] || fail "status $rc: $(cat "$dir/out" "$dir/err")"
[ -f "$dir/r.txt" ] || fail "the program ran unprofiled: $(cat "$dir/err")"
grep -q "^allocations 4, frees 0" "$dir/r.txt" || fail "wrong counts: $(head -12 "$dir/r.txt")"

# What the program gets: one preloaded path without a separator, a link to the copy.
"$top/src/cli/cudafrag" run --sim -- printenv LD_PRELOAD LD_LIBRARY_PATH >"$dir/env" ||
    fail "printenv under cudafrag run failed"
preload=$(sed -n 1p "$dir/env") libpath=$(sed -n 2p "$dir/env")
case $preload in
"$TMPDIR"/cudafrag-*/libcudafrag.so) ;;
*) fail "LD_PRELOAD '$preload' is not a private link under \$TMPDIR" ;;
esac
[ "$(readlink "$preload")" = "$top/src/libcudafrag.so" ] || fail "the link points elsewhere"
case $libpath in
*" "*) fail "LD_LIBRARY_PATH '$libpath' still holds the odd directory" ;;
esac
[ "$(echo "$libpath" | tr ':' '\n' | wc -l)" -eq 2 ] || fail "LD_LIBRARY_PATH '$libpath'"
# Nested: the link is recognised, the library is preloaded once.
nested=$("$top/src/cli/cudafrag" run -- "$top/src/cli/cudafrag" run -- printenv LD_PRELOAD)
[ "$nested" = "$preload" ] || fail "nested LD_PRELOAD '$nested'"
exit 0
