#!/bin/sh
# Usage: exit_paths.sh LIBCUDAFRAG PROGRAM MODE
# Every way out of a process gives exactly one report (or, for fatal signals, the
# one-line summary saying what could not be included), with the program's exit
# status unchanged, and never hangs: each run is bounded by timeout.
set -u
lib=$1 prog=$2 mode=$3
. "$(dirname "$0")/../lib.sh"
ulimit -c 0
scratch
t_case=$mode
on_fail() { ls -la "$dir"; cat "$dir/err"; }
count() { ls "$dir" | grep -c "$1"; }
export CUDAFRAG_OUTPUT="$dir/r-%p" CUDAFRAG_STDERR=0 LD_PRELOAD="$lib"

base=${mode%-busy}
# Exact totals only when the second thread was stopped before the exit.
exact=0
[ "$mode" = "$base" ] && [ "$base" != term-external ] && exact=1
case $base in
return | teardown) want=7 reason=exit;;
exit | usr1) want=3 reason=exit;;
_exit) want=4 reason=_exit;;
_Exit) want=5 reason=_Exit;;
abort) want=134 sig=SIGABRT;;
segv) want=139 sig=SIGSEGV;;
bus) want=135 sig=SIGBUS;;
term | term-external) want=143 sig=SIGTERM;;
int) want=130 sig=SIGINT;;
*) fail "unknown mode";;
esac

if [ "$base" = term-external ]; then
    # Killed from outside while its second thread is inside the hooks.
    timeout 20 "$prog" wait-busy "$dir/ready" 2>"$dir/err" &
    pid=$!
    n=0
    while [ ! -s "$dir/ready" ] && [ $n -lt 1000 ]; do sleep 0.02; n=$((n + 1)); done
    [ -s "$dir/ready" ] || fail "program never got ready"
    # timeout passes TERM on to the program.
    kill -TERM $pid
    wait $pid; rc=$?
    rm -f "$dir/ready"
else
    timeout 20 "$prog" "$mode" 2>"$dir/err"; rc=$?
fi
[ $rc -ne 124 ] || fail "hung (killed by timeout)"
[ $rc -eq $want ] || fail "status $rc, want $want"
grep -q "still running" "$dir/err" && fail "the program survived its own exit"

if [ -n "${reason:-}" ]; then
    # Interim reports (SIGUSR1) carry a sequence number: r-PID.N.txt.
    [ "$(count '^r-[0-9]*\.txt$')" -eq 1 ] || fail "want exactly one final text report"
    [ "$(count '^r-[0-9]*\.json$')" -eq 1 ] || fail "want exactly one final JSON report"
    [ "$(cat "$dir"/r-*.txt | grep -c "final report")" -eq 1 ] || fail "final report written more than once"
    final=$dir/$(ls "$dir" | grep -E '^r-[0-9]+\.txt$' | head -n 1)
    grep -q "final report ($reason)" "$final" || fail "no final report ($reason)"
    if [ "$base" = usr1 ]; then
        [ "$(count '^r-[0-9]*\.[0-9]*\.txt$')" -ge 1 ] || fail "no interim report"
        grep -L "end of cudafrag report" "$dir"/r-*.txt | grep -q . && fail "a report is cut short"
    fi
    grep -q "killed by" "$dir/err" && fail "crash summary on a normal exit"
    if [ $exact -eq 1 ] && command -v jq >/dev/null; then
        j=${final%.txt}.json
        [ "$(jq .summary.live_at_report_bytes "$j")" = 2097152 ] || fail "live bytes at exit wrong"
        [ "$(jq .summary.live_at_report_count "$j")" = 2 ] || fail "live count at exit wrong"
    fi
else
    [ "$(grep -c 'cudafrag: killed by' "$dir/err")" -eq 1 ] || fail "summary not written exactly once"
    grep -q "^cudafrag: killed by $sig; report incomplete: only these totals were saved: [0-9]* allocations, [0-9]* frees, [0-9]* allocations live ([0-9]* bytes), peak live [0-9]* bytes (sum over devices)$" \
        "$dir/err" || fail "no $sig summary"
    if [ $exact -eq 1 ]; then
        grep -q " 2 allocations live (2097152 bytes)" "$dir/err" || fail "summary totals wrong"
    fi
    [ "$(count '^r-')" -eq 0 ] || fail "report files written from a signal handler"
fi
exit 0
