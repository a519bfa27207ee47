#!/bin/sh
# Usage: small_stack.sh LIBCUDAFRAG CUDAFRAG PROGRAM CASE
# Programs with small stacks run under cudafrag as they run natively. PROGRAM runs
# one thread with a 16 KiB stack (pthread_attr_setstacksize) making cudaMalloc and
# cudaFree calls. Measured here (x86-64, glibc 2.36, 40 runs each): /bin/true runs
# with `ulimit -s 16`, but with any library preloaded (an empty one too) it
# crashes in 6 (16 KiB) and 8 (18 KiB) of 40 runs, in ld.so, before any code of
# the library; from 20 KiB on it never does. So main-thread stacks are tested at
# 20 KiB, the smallest a preloaded program can be relied on to run with.
set -u
lib=$1 cli=$2 prog=$3 case=$4
. "$(dirname "$0")/../lib.sh"
t_case=$case
need jq
scratch
on_fail() { cat "$dir/err" "$dir/r.txt" 2>/dev/null; }

# counts ALLOCS FREES: the JSON report's counts, the allocation left live, and
# every allocation said to be recorded without a stack, in the JSON and the text.
counts() {
    [ "$(jq .summary.allocs "$dir/r.json")" = "$1" ] || fail "allocs: $(jq .summary.allocs "$dir/r.json"), want $1"
    [ "$(jq .summary.frees "$dir/r.json")" = "$2" ] || fail "frees: $(jq .summary.frees "$dir/r.json"), want $2"
    [ "$(jq .summary.live_at_report_bytes "$dir/r.json")" = 4096 ] || fail "live bytes at exit"
    # Under ASan frames are larger and may live on its fake stacks: which
    # allocations had room to unwind is then the sanitizer's, not the program's;
    # that none crashed and every count is exact still holds.
    [ -n "${ASAN_OPTIONS:-}" ] && return 0
    [ "$(jq .summary.allocs_without_stack "$dir/r.json")" = "$1" ] || fail "allocations without a stack: $(jq .summary.allocs_without_stack "$dir/r.json"), want $1"
    grep -q "^note: $1 allocations recorded without a call stack: their thread's stack was too small to unwind\$" "$dir/r.txt" ||
        fail "the text does not say that the allocations have no call stack"
}

case $case in
thread)
    profiled "$prog" 16 200 >"$dir/out" 2>"$dir/err"; rc=$?
    [ $rc -eq 0 ] || fail "status $rc"
    counts 201 200;;
thread-exit)
    # exit() on the small thread: the report is written on a thread of cudafrag's.
    profiled "$prog" 16 200 exit >"$dir/out" 2>"$dir/err"; rc=$?
    [ $rc -eq 0 ] || fail "status $rc"
    grep -q '^ok$' "$dir/out" || fail "the program's output is lost"
    counts 201 200;;
ulimit-command)
    # Everything `cudafrag run` does before it execs the program.
    for sim in "" --sim; do
        (ulimit -s 20 && exec "$cli" run $sim -- "$dir/no-such-program") >/dev/null 2>"$dir/err"; rc=$?
        [ $rc -eq 127 ] || fail "cudafrag run $sim: status $rc, want 127 (program not found)"
    done;;
ulimit-program)
    for i in 1 2 3 4 5; do
        for sim in "" --sim; do
            (ulimit -s 20 && exec "$cli" run $sim -- /bin/true) 2>"$dir/err"; rc=$?
            [ $rc -eq 0 ] || fail "cudafrag run $sim -- /bin/true: status $rc"
        done
        (ulimit -s 20 && CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 exec "$cli" run --sim -- "$prog" 16 20) \
            >/dev/null 2>"$dir/err"; rc=$?
        [ $rc -eq 0 ] || fail "cudafrag run --sim -- PROGRAM: status $rc"
        counts 21 20
    done;;
*) fail "unknown case";;
esac
exit 0
