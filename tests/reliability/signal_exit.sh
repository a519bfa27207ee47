#!/bin/sh
# Usage: signal_exit.sh LIBCUDAFRAG PROGRAM MODE [RUNS]
# A SIGTERM handler that calls exit() while the program is inside cudafrag's
# hooks: the final report must never hang on a lock the interrupted thread
# holds. It is written, complete or saying that it is partial, and the
# program's exit status (9, from its handler) is unchanged. Stress runs the
# program RUNS times (the signal lands at a random point).
set -u
lib=$1 prog=$2 mode=$3 runs=${4:-1}
ulimit -c 0
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL ($mode, run $i): $*" >&2; ls -la "$dir" >&2; cat "$dir/err" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not installed" >&2; exit 77; }
export CUDAFRAG_OUTPUT="$dir/r-%p" CUDAFRAG_STDERR=0 CUDAFRAG_STACK_DEPTH=0 LD_PRELOAD="$lib"

partial=0
i=1
while [ $i -le "$runs" ]; do
    rm -f "$dir"/r-*
    start=$(date +%s)
    timeout -k 5 20 "$prog" "$mode" 2>"$dir/err"; rc=$?
    took=$(($(date +%s) - start))
    [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "hung (killed by timeout)"
    [ $rc -eq 9 ] || fail "status $rc, want 9"
    # The wait for a lock that is not released is bounded by about a second.
    [ $took -le 5 ] || fail "exit took $took s"
    [ "$(ls "$dir" | grep -c '^r-[0-9]*\.txt$')" -eq 1 ] || fail "want exactly one text report"
    [ "$(ls "$dir" | grep -c '^r-[0-9]*\.json$')" -eq 1 ] || fail "want exactly one JSON report"
    txt=$(echo "$dir"/r-*.txt) json=$(echo "$dir"/r-*.json)
    grep -q "final report (exit)" "$txt" || fail "no final report"
    grep -q "^==== end of cudafrag report ====$" "$txt" || fail "text report cut short"
    p=$(jq -r .partial "$json") || fail "JSON report unreadable"
    if [ "$p" = true ]; then
        partial=$((partial + 1))
        jq -e '.partial_reason | type == "string" and length > 0' "$json" >/dev/null ||
            fail "partial report without a reason"
        grep -q "^note: partial report: " "$txt" || fail "the text report does not say it is partial"
    else
        [ "$p" = false ] || fail "JSON partial is '$p'"
        grep -q "partial report" "$txt" && fail "complete JSON report, partial text report"
    fi
    i=$((i + 1))
done
# In-hook: the signal came while the main thread held cudafrag's locks.
if [ "$mode" = in-hook ] && [ $partial -ne 1 ]; then
    i=1
    fail "the report does not say it is partial"
fi
echo "$runs runs, $partial partial reports"
exit 0
