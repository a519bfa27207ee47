#!/bin/sh
# Usage: after_final.sh LIBCUDAFRAG PROGRAM
# A report asked for after the final report (from an atexit handler that runs
# after it) writes nothing: the process is exiting, and an interim report begun
# then is cut short by the exit (what made exit-usr1 fail now and then, when the
# last of a burst of SIGUSR1 was served after the final report).
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../lib.sh"
scratch
on_fail() { ls -la "$dir"; cat "$dir/err"; }
export CUDAFRAG_OUTPUT="$dir/r-%p" CUDAFRAG_STDERR=0
LD_PRELOAD="$lib" timeout 20 "$prog" 2>"$dir/err"; rc=$?
[ $rc -eq 3 ] || fail "status $rc, want 3"
grep -q "^report_now after the final report: " "$dir/err" || fail "the late handler did not run"
[ "$(ls "$dir" | grep -c '^r-[0-9]*\.txt$')" -eq 1 ] || fail "want one final text report"
ls "$dir" | grep -q '^r-[0-9]*\.[0-9]*\.' && fail "a report was written after the final one"
grep -q "^report_now after the final report: -1$" "$dir/err" || fail "cudafrag_report_now did not refuse"
exit 0
