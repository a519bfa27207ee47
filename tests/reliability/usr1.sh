#!/bin/sh
# Usage: usr1.sh CUDAFRAG LIBCUDAFRAG CASE
# SIGUSR1 asks a profiled program for an interim report; a program that made no
# CUDA call keeps the default action (it is killed) and writes no report.
set -u
cudafrag=$1 lib=$2 case=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL ($case): $*" >&2; ls -la "$dir" >&2; cat "$dir/out" "$dir/err" >&2; exit 1; }
export CUDAFRAG_OUTPUT="$dir/r-%p" CUDAFRAG_STDERR=1

case $case in
no-cuda)
    # sh is dynamically linked: cudafrag is preloaded into it.
    timeout 20 "$cudafrag" run -- sh -c 'kill -USR1 $$; echo survived' >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -eq 138 ] || fail "status $rc, want 138 (killed by SIGUSR1)"
    grep -q survived "$dir/out" && fail "SIGUSR1 did not end the program"
    [ "$(ls "$dir" | grep -c '^r-')" -eq 0 ] || fail "a report from a program without CUDA calls"
    grep -q cudafrag "$dir/err" && fail "cudafrag said something";;
*) fail "unknown case";;
esac
exit 0
