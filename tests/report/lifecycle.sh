#!/bin/sh
# Usage: lifecycle.sh LIBCUDAFRAG PROGRAM CASE VERSION
# Runs PROGRAM with the library preloaded and checks which reports appear.
set -u
lib=$1 prog=$2 case=$3 version=$4
. "$(dirname "$0")/../lib.sh"
ulimit -c 0
scratch
t_case=$case
on_fail() { ls -la "$dir"; }
count() { ls "$dir" | grep -c "$1"; }

export CUDAFRAG_OUTPUT="$dir/r-%p" CUDAFRAG_STDERR=0 CUDAFRAG_ALWAYS_REPORT=1
run() { LD_PRELOAD="$lib" "$prog" "$@" 2>"$dir/err.log"; }

case $case in
exit)
    run exit; rc=$?
    [ $rc -eq 3 ] || fail "status $rc, want 3"
    grep -q "final report (exit)" "$dir"/r-*.txt || fail "no final report"
    [ "$(count '\.json$')" -eq 1 ] || fail "no JSON report";;
_exit)
    run _exit; rc=$?
    [ $rc -eq 4 ] || fail "status $rc, want 4"
    grep -q "final report (_exit)" "$dir"/r-*.txt || fail "no final report";;
handler-exit)
    # _exit from a signal handler: only the async-signal-safe summary.
    run handler-exit; rc=$?
    [ $rc -eq 6 ] || fail "status $rc, want 6"
    grep -q "cudafrag: _exit called in a signal handler; report incomplete" "$dir/err.log" ||
        fail "no summary: $(cat "$dir/err.log")"
    [ "$(count '^r-')" -eq 0 ] || fail "full report written from a signal handler";;
blocked-exit)
    run blocked-exit; rc=$?
    [ $rc -eq 4 ] || fail "status $rc, want 4"
    grep -q "final report (_exit)" "$dir"/r-*.txt || fail "no final report";;
_Exit)
    run _Exit; rc=$?
    [ $rc -eq 5 ] || fail "status $rc, want 5"
    grep -q "final report (_Exit)" "$dir"/r-*.txt || fail "no final report";;
quiet)
    # No CUDA allocation call and no CUDAFRAG_ALWAYS_REPORT: no report at all.
    CUDAFRAG_ALWAYS_REPORT=0 CUDAFRAG_STDERR=1 run exit; rc=$?
    [ $rc -eq 3 ] || fail "status $rc"
    [ "$(count '^r-')" -eq 0 ] || fail "report written without CUDA activity"
    [ ! -s "$dir/err.log" ] || fail "unexpected stderr: $(cat "$dir/err.log")";;
segv)
    run segv; rc=$?
    [ $rc -eq 139 ] || fail "status $rc, want 139 (SIGSEGV)"
    grep -q "cudafrag: killed by SIGSEGV; report incomplete: only these totals were saved: 0 allocations" \
        "$dir/err.log" || fail "no crash summary: $(cat "$dir/err.log")"
    [ "$(grep -c 'killed by' "$dir/err.log")" -eq 1 ] || fail "summary not written exactly once";;
usr1)
    # The program waits for the interim report, whose name it cannot know before
    # it runs: give it a fixed pattern.
    CUDAFRAG_OUTPUT="$dir/u" run usr1 "$dir/u.1.txt"; rc=$?
    [ $rc -eq 0 ] || fail "status $rc"
    grep -q "interim report (SIGUSR1)" "$dir/u.1.txt" || fail "no interim report"
    grep -q "final report (exit)" "$dir/u.txt" || fail "final report missing or clobbered";;
children)
    # CUDAFRAG_CHILDREN=0: what the program would pass to its children lacks us.
    out=$(CUDAFRAG_CHILDREN=0 LD_PRELOAD="$lib libm.so.6" "$prog" preload 2>/dev/null)
    [ "$out" = "libm.so.6" ] || fail "LD_PRELOAD seen by the program: '$out'"
    out=$(CUDAFRAG_CHILDREN=0 LD_PRELOAD="$lib" "$prog" preload 2>/dev/null)
    [ "$out" = "(unset)" ] || fail "LD_PRELOAD seen by the program: '$out'"
    out=$(LD_PRELOAD="$lib" "$prog" preload 2>/dev/null)
    [ "$out" = "$lib" ] || fail "CUDAFRAG_CHILDREN=1 changed LD_PRELOAD: '$out'";;
fork)
    run fork; rc=$?
    [ $rc -eq 0 ] || fail "status $rc"
    [ "$(count '^r-.*\.txt$')" -eq 2 ] || fail "want one report per process";;
report-now)
    out=$(run report-now); rc=$?
    [ $rc -eq 0 ] || fail "status $rc"
    [ "$out" = "$version 0" ] || fail "cudafrag_version/cudafrag_report_now said '$out'"
    [ "$(count '^r-.*\.1\.txt$')" -eq 1 ] || fail "no interim report file";;
*) fail "unknown case";;
esac
exit 0
