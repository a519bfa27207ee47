#!/bin/sh
# framework_fold.sh LIBCUDAFRAG PROGRAM CUDAFRAG: see framework_fold.c; and `cudafrag diff`
# keys the library's own thread by the frame the report shows, not as "no stack".
set -u
lib=$1 prog=$2 cli=$3
. "$(dirname "$0")/../lib.sh"
scratch
on_fail() { sed -n '/top call sites by peak/,/^$/p' "$dir/r.txt"; }
profiled CUDAFRAG_STACK_DEPTH=32 "$prog" >/dev/null || fail "the program failed"
# The exit report names frames from the symbol table (file:line needs DWARF: a trace).
grep -qE "^    at main \(framework_fold\+0x[0-9a-f]+\)" "$dir/r.txt" ||
    fail "the call through the library is not shown at the program's main"
grep -qE "^    at (engine_thread|stub_alloc) \(libtorch_cfstub\.so\+0x[0-9a-f]+\)" "$dir/r.txt" ||
    fail "the library's own thread is not shown at its frame"
! grep -qE "^    at .*\((libc\.so\.6|libcudart)" "$dir/r.txt" || fail "a site shown in libc or the runtime"
"$cli" diff --json "$dir/r.json" "$dir/r.json" >"$dir/diff.json" || fail "cudafrag diff failed"
grep -q '"key":"cudaMalloc < libtorch_cfstub.so:' "$dir/diff.json" ||
    fail "diff does not key the library's own thread by its frame: $(cat "$dir/diff.json")"
echo "ok"
