#!/bin/sh
# oom.sh CUDAFRAG LIBCUDAFRAG PROGRAM CASE: the report at the first out-of-memory
# failure (CUDAFRAG_ON_OOM) and the final report's "oom" object, on a 64 MiB
# simulated device that oom_prog.c fills (40 MiB of weights, then 4 MiB
# activations until an allocation fails).
set -u
cli=$1 lib=$2 prog=$3 case=$4
. "$(dirname "$0")/../lib.sh"
need jq
scratch
t_case=$case
on_fail() { ls -la "$dir"; cat "$dir/err" "$dir"/r.oom.txt 2>/dev/null; }
export SIMCUDA_MEM=64M
MiB=1048576

# The OOM report names the failed request and, as the top holder, the weights.
check_oom_report() {
    api=$1
    [ -s "$dir/r.oom.txt" ] && [ -s "$dir/r.oom.json" ] || fail "no OOM report"
    grep -q "interim report (out of memory)" "$dir/r.oom.txt" || fail "not marked as the OOM report"
    grep -q "^  $api of 4.00 MiB on device 0 failed at +" "$dir/r.oom.txt" ||
        fail "the failed request is not named"
    grep -q "^  at grow_activations (" "$dir/r.oom.txt" || fail "the failed call's site is not named"
    sed -n '/^  who held the memory/,/^$/p' "$dir/r.oom.txt" | sed -n 2p |
        grep -q "40.0 MiB .* user code  *at alloc_weights (" ||
        fail "the weights are not the top holder, owned by user code"
    j=$dir/r.oom.json
    [ "$(jq -r '.kind + "/" + .reason' "$j")" = "interim/out of memory" ] || fail "JSON kind/reason"
    [ "$(jq .oom.report_at_failure "$j")" = true ] || fail "JSON: not the report at the failure"
    [ "$(jq -r .oom.failed_request.api "$j")" = "$api" ] || fail "JSON: failed API"
    [ "$(jq .oom.failed_request.request_bytes "$j")" = $((4 * MiB)) ] || fail "JSON: failed size"
    [ "$(jq .oom.failed_request.total_bytes "$j")" = $((64 * MiB)) ] || fail "JSON: device total"
    jq -e '.oom.failed_request.site.label | test("^grow_activations ")' "$j" >/dev/null ||
        fail "JSON: failed call site"
    jq -e '.oom.failed_request.site.frames | map(.function) | index("main") != null' "$j" \
        >/dev/null || fail "JSON: the failed call's stack lacks main"
    [ "$(jq .oom.top_holders[0].bytes "$j")" = $((40 * MiB)) ] || fail "JSON: top holder size"
    jq -e '.oom.top_holders[0].site.label | test("^alloc_weights ")' "$j" >/dev/null ||
        fail "JSON: top holder"
    [ "$(jq -r .oom.top_holders[0].site.owner "$j")" = user-code ] || fail "JSON: top holder's owner"
    jq -e '.oom.first_unix_s > 1.7e9' "$j" >/dev/null || fail "JSON: no wall-clock time"
    # Written before the program could go on: too early to say it recovered.
    [ "$(jq .oom.recovered "$j")" = null ] || fail "JSON: the OOM report judges the recovery"
    grep -q "^1 failed allocation (out of memory), first at +[0-9.]* [mu]*s$" "$dir/r.oom.txt" ||
        fail "the OOM report's summary line"
}

case $case in
basic)
    native=$("$prog" recover) || fail "native run failed"
    out=$(profiled CUDAFRAG_ON_OOM=report CUDAFRAG_STDERR=1 "$prog" recover 2>"$dir/err") ||
        fail "program failed under cudafrag (status $?)"
    # The program saw the same status and errno as without cudafrag.
    [ "$out" = "$native" ] || fail "the program saw '$out', natively '$native'"
    check_oom_report cudaMalloc
    # One line on stderr names the files; the report itself is in them.
    grep -q "^cudafrag: out of memory (cudaMalloc of 4.00 MiB on device 0): report written to $dir/r.oom.txt, $dir/r.oom.json$" \
        "$dir/err" || fail "no stderr line naming the OOM report"
    [ "$(grep -c 'interim report (out of memory)' "$dir/err")" = 0 ] || fail "whole OOM report on stderr"
    # The final report counts both failures and says the program went on.
    [ "$(jq .oom.count "$dir/r.json")" = 2 ] || fail "final: oom.count"
    [ "$(jq .oom.recovered "$dir/r.json")" = true ] || fail "final: not recovered"
    [ "$(jq .oom.report_at_failure "$dir/r.json")" = false ] || fail "final: marked as the OOM report"
    [ "$(jq .oom.top_holders "$dir/r.json")" = "[]" ] || fail "final: holders"
    grep -q "^2 failed allocations (out of memory), first at +[0-9.]* [mu]*s; the program recovered" \
        "$dir/r.txt" || fail "final text: no OOM line"
    [ "$(grep -c '^-- out of memory: the failed request' "$dir/r.txt")" = 0 ] ||
        fail "final text has the OOM report's section";;
no-recover)
    profiled CUDAFRAG_ON_OOM=report "$prog" no-recover >/dev/null 2>"$dir/err" || fail "status $?"
    check_oom_report cudaMalloc
    [ "$(jq .oom.recovered "$dir/r.json")" = false ] || fail "final: recovered"
    grep -q "^2 failed allocations (out of memory), first at .*; no allocation succeeded after it" \
        "$dir/r.txt" || fail "final text: no OOM line";;
async)
    profiled CUDAFRAG_ON_OOM=report "$prog" recover async >/dev/null 2>"$dir/err" ||
        fail "status $?"
    check_oom_report cudaMallocAsync;;
off)
    # The default: no OOM report, the failures still counted.
    profiled "$prog" recover >/dev/null 2>"$dir/err" || fail "status $?"
    [ ! -e "$dir/r.oom.txt" ] && [ ! -e "$dir/r.oom.json" ] || fail "OOM report written while off"
    [ "$(jq .oom.count "$dir/r.json")" = 2 ] || fail "final: oom.count"
    profiled CUDAFRAG_ON_OOM=off "$prog" recover >/dev/null 2>"$dir/err" || fail "status $?"
    [ ! -e "$dir/r.oom.txt" ] || fail "OOM report written with off";;
bad-value)
    profiled CUDAFRAG_ON_OOM=sometimes "$prog" recover >/dev/null 2>"$dir/err" || fail "status $?"
    grep -q '^cudafrag: ignoring CUDAFRAG_ON_OOM="sometimes": expected one of off, report, trace; using the default off$' \
        "$dir/err" || fail "no warning naming the variable and its values"
    [ "$(grep -c CUDAFRAG_ON_OOM "$dir/err")" = 1 ] || fail "warned more than once"
    [ ! -e "$dir/r.oom.txt" ] || fail "OOM report written with a bad value";;
killed)
    # SIGKILL right after the failure: the failing call returned only once the
    # report was written. The program first holds 20 000 small host buffers, whose
    # report outlasts the way from the call to the kill: with the wait taken out,
    # none of 12 runs left a report (with 3 of 10 when it held only the weights).
    profiled CUDAFRAG_ON_OOM=report "$prog" kill >/dev/null 2>"$dir/err"
    rc=$?
    [ $rc -eq 137 ] || fail "status $rc, want 137 (SIGKILL)"
    check_oom_report cudaMalloc
    jq -e . "$dir/r.oom.json" >/dev/null || fail "the OOM report's JSON is not whole";;
trace)
    # With 60 s between flushes only the flush at the failure can have written its
    # event before the SIGKILL.
    traced CUDAFRAG_ON_OOM=trace CUDAFRAG_TRACE_FLUSH_MS=60000 "$prog" kill >"$dir/out" 2>"$dir/err"
    rc=$?
    had=$(sed -n 's/.* after \([0-9]*\) activations$/\1/p' "$dir/out")
    host=$(sed -n 's/^held \([0-9]*\) host buffers$/\1/p' "$dir/out")
    [ $rc -eq 137 ] || fail "status $rc, want 137 (SIGKILL)"
    check_oom_report cudaMalloc
    replayed replay.json --json
    [ "$(jq .oom.count "$dir/replay.json")" = 1 ] || fail "the trace lacks the failure"
    [ -n "$had" ] && [ -n "$host" ] || fail "the program did not say how many allocations it made"
    # The weights, the activations and the host buffers.
    [ "$(jq '.summary.allocs' "$dir/replay.json")" = $((1 + had + host)) ] ||
        fail "the trace lacks allocations before the failure: $(jq .summary.allocs "$dir/replay.json")"
    jq -e '.oom.failed_request.site.frames | length > 0' "$dir/replay.json" >/dev/null ||
        fail "the trace's failure has no call site";;
replay)
    # The trace of a whole run gives the final report's oom object again.
    traced "$prog" no-recover >/dev/null 2>"$dir/err" || fail "status $?"
    replayed replay.json --json
    for k in count recovered; do
        [ "$(jq .oom.$k "$dir/replay.json")" = "$(jq .oom.$k "$dir/r.json")" ] ||
            fail "oom.$k: trace $(jq .oom.$k "$dir/replay.json"), process $(jq .oom.$k "$dir/r.json")"
    done
    a=$(jq .oom.first_unix_s "$dir/r.json") b=$(jq .oom.first_unix_s "$dir/replay.json")
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d < 0.01 && d > -0.01) }' ||
        fail "first_unix_s: process $a, trace $b";;
merge)
    # Rank 1 fails first; merge names it, from the OOM reports and the final ones.
    profiled RANK=1 CUDAFRAG_OUTPUT="$dir/r1" CUDAFRAG_ON_OOM=report "$prog" recover >/dev/null 2>&1 ||
        fail "rank 1 failed"
    sleep 0.2
    profiled RANK=0 CUDAFRAG_OUTPUT="$dir/r0" CUDAFRAG_ON_OOM=report "$prog" no-recover >/dev/null 2>&1 ||
        fail "rank 0 failed"
    "$cli" merge "$dir/r0.oom.json" "$dir/r1.oom.json" >"$dir/m.txt" 2>"$dir/err" || fail "merge failed"
    grep -q "^out of memory: 2 of 2 ranks; rank 1 failed first, at 20[0-9-]* [0-9:.]* UTC$" "$dir/m.txt" ||
        fail "merge does not name rank 1: $(cat "$dir/m.txt")"
    grep -q "^  rank 0: 1 failed allocation, first at +.* s after rank 1) (the report written at the failure)$" \
        "$dir/m.txt" || fail "rank 0's line: $(cat "$dir/m.txt")"
    "$cli" merge --json "$dir/r0.json" "$dir/r1.json" >"$dir/m.json" || fail "merge --json failed"
    [ "$(jq -r .first_oom.rank "$dir/m.json")" = 1 ] || fail "JSON: first_oom $(jq .first_oom "$dir/m.json")"
    [ "$(jq '.ranks[] | select(.rank == "0") | .oom.recovered' "$dir/m.json")" = false ] ||
        fail "JSON: rank 0 recovered"
    [ "$(jq '.ranks[] | select(.rank == "1") | .oom.count' "$dir/m.json")" = 2 ] ||
        fail "JSON: rank 1 count";;
run-option)
    # cudafrag run --on-oom sets the variable; a word it does not know is a usage error.
    "$cli" run --sim --on-oom report --output "$dir/r" -- "$prog" recover >/dev/null 2>"$dir/err" ||
        fail "cudafrag run failed (status $?)"
    check_oom_report cudaMalloc
    "$cli" run --on-oom sometimes -- true 2>"$dir/err"
    rc=$?
    [ $rc -eq 2 ] || fail "--on-oom sometimes: status $rc, want 2"
    grep -q -- '--on-oom "sometimes": expected off, report or trace' "$dir/err" ||
        fail "no usage error naming the words";;
*) fail "unknown case";;
esac
exit 0
