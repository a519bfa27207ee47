#!/bin/sh
# Usage: processes.sh LIBCUDAFRAG PROGRAM MODE
# Which processes write reports: one per process that used CUDA (forked or
# executed children included), none for processes that did not (the shell in
# between), only the parent's with CUDAFRAG_CHILDREN=0. A process image that
# used CUDA and is replaced by exec writes its report before the exec, as
# PATTERN.exec.txt/.json: the new image keeps the pid, so its own report may
# have the same name.
set -u
lib=$1 prog=$2 mode=$3
. "$(dirname "$0")/../lib.sh"
scratch
t_case=$mode
on_fail() { ls -la "$dir"; cat "$dir/err"; }
reports() { ls "$dir" | grep -c '^r-.*\.txt$'; }
export CUDAFRAG_OUTPUT="$dir/r-%p" CUDAFRAG_STDERR=0

run() {
    # Preloaded into the program only: timeout would otherwise apply
    # CUDAFRAG_CHILDREN=0 itself and start the program without cudafrag.
    timeout 60 sh -c 'LD_PRELOAD=$0 exec "$1" "$2"' "$lib" "$prog" "$1" 2>"$dir/err" &
    pid=$!
    wait $pid; rc=$?
    [ $rc -ne 124 ] || fail "hung (killed by timeout)"
    [ $rc -eq 0 ] || fail "status $rc"
}
# timeout forks the program: its pid is not $!. The parent's report is the one
# that does not hold the child's allocation.
child_reports() {
    n=0
    for j in "$dir"/r-*.json; do
        jq -e '[.live_at_report[].bytes] | any(. == 777777)' "$j" >/dev/null && n=$((n + 1))
    done
    echo $n
}
command -v jq >/dev/null || { echo "jq not installed" >&2; exit 77; }
# one_report GLOB REASON LIVE: exactly one JSON report matches, with that reason
# and those live bytes at the end.
one_report() {
    n=$(ls "$dir" | grep -c "$1")
    [ "$n" -eq 1 ] || fail "$n reports match $1, want 1"
    j=$dir/$(ls "$dir" | grep "$1")
    [ "$(jq -r .reason "$j")" = "$2" ] || fail "$j: reason $(jq -r .reason "$j"), want $2"
    [ "$(jq .summary.live_at_report_bytes "$j")" = "$3" ] || fail "$j: live bytes, want $3"
}

case $mode in
fork-hook)
    run fork-hook
    [ "$(reports)" -eq 3 ] || fail "$(reports) reports, want 3 (parent; interim and final of the child)"
    [ "$(ls "$dir" | grep -c '^r-.*\.1\.txt$')" -eq 1 ] || fail "no interim report"
    # The child may not call the driver: both its reports say so, the parent's not,
    # and still carry the footprint computed from the events it inherited.
    unsampled=$(cat "$dir"/r-*.json | jq -s '[.[] | select(.summary.driver_usable == false)] | length')
    [ "$unsampled" -eq 2 ] || fail "$unsampled reports say the driver was not usable, want 2"
    [ "$(grep -l '^note: a child forked after its parent used CUDA' "$dir"/r-*.txt | wc -l)" -eq 2 ] ||
        fail "the child's text reports do not say the driver was not usable"
    nofp=$(cat "$dir"/r-*.json | jq -s '[.[] | select(.summary.peak_footprint_bytes == 0)] | length')
    [ "$nofp" -eq 0 ] || fail "$nofp reports have no footprint";;
system | spawn)
    run $mode
    [ "$(reports)" -eq 2 ] || fail "$(reports) reports, want 2 (parent + child; sh made none)"
    [ "$(child_reports)" -eq 1 ] || fail "the child's report is missing";;
system-nochildren | spawn-nochildren)
    CUDAFRAG_CHILDREN=0 run ${mode%-nochildren}
    [ "$(reports)" -eq 1 ] || fail "$(reports) reports, want only the parent's"
    [ "$(child_reports)" -eq 0 ] || fail "the child was profiled";;
late)
    run late
    [ "$(reports)" -eq 1 ] || fail "$(reports) reports, want 1"
    j=$(echo "$dir"/r-*.json)
    [ "$(jq '.apis[] | select(.name == "cudaMalloc") | .calls' "$j")" = 3 ] || fail "cudaMalloc count"
    [ "$(jq .summary.live_at_report_bytes "$j")" = 4000 ] || fail "live bytes at exit";;
exec-fail)
    # The report before the exec, then, since the program went on, its
    # final report at exit.
    run exec-fail
    [ "$(reports)" -eq 2 ] || fail "$(reports) reports, want 2"
    one_report '^r-[0-9]*\.exec\.json$' exec 555555
    one_report '^r-[0-9]*\.json$' exit 555555;;
exec-*)
    run $mode
    [ "$(reports)" -eq 2 ] || fail "$(reports) reports, want 2 (before the exec, the new image)"
    one_report '^r-[0-9]*\.exec\.json$' exec 555555
    one_report '^r-[0-9]*\.json$' exit 777777
    grep -q "final report (exec)" "$dir"/r-*.exec.txt || fail "the text report before exec";;
vfork-exec | fork-exec)
    # The child shares (vfork) or copies (fork) the parent's record but made no
    # CUDA call of its own: no report at its exec; the parent's is written at
    # its exit, the new image's at its own.
    run $mode
    [ "$(reports)" -eq 2 ] || fail "$(reports) reports, want 2 (parent, new image)"
    [ "$(ls "$dir" | grep -c '\.exec\.')" -eq 0 ] || fail "a report at the child's exec"
    parent=$(cat "$dir"/r-*.json | jq -s '[.[] | select(.summary.live_at_report_bytes == 555555 and .reason == "exit")] | length')
    [ "$parent" -eq 1 ] || fail "the parent's final report is missing"
    [ "$(child_reports)" -eq 1 ] || fail "the new image's report is missing";;
_Fork-exit)
    # The child of _Fork (no fork handlers) calls exit(): only the parent reports.
    run _Fork-exit
    [ "$(reports)" -eq 1 ] || fail "$(reports) reports, want 1 (the parent's)"
    one_report '^r-[0-9]*\.json$' exit 555555;;
fork-exits)
    # Children that made no CUDA call of their own hold only the parent's
    # figures: as at exec, no report from them at exit() or _exit().
    run fork-exits
    [ "$(reports)" -eq 1 ] || fail "$(reports) reports, want 1 (the parent's)"
    one_report '^r-[0-9]*\.json$' exit 555555;;
fork-exits-always)
    # CUDAFRAG_ALWAYS_REPORT=1 asks for a report from every process: the
    # children's say that what they hold live is the parent's.
    CUDAFRAG_ALWAYS_REPORT=1 run fork-exits
    [ "$(reports)" -eq 3 ] || fail "$(reports) reports, want 3 (parent, two children)"
    ppid=$(cat "$dir"/r-*.json | jq -s '.[] | select(.program.forked_from_pid == null) | .program.pid')
    [ -n "$ppid" ] || fail "no report of the parent"
    kids=$(cat "$dir"/r-*.json | jq -s "[.[] | select(.program.forked_from_pid == $ppid and
        .summary.inherited_live_bytes == 555555 and .summary.inherited_live_count == 1)] | length")
    [ "$kids" -eq 2 ] || fail "$kids children's reports name the parent and what it left live, want 2"
    [ "$(grep -l "^note: forked from pid $ppid after it used CUDA: 1 allocations (543 KiB) live at the fork are the parent's" \
        "$dir"/r-*.txt | wc -l)" -eq 2 ] || fail "the children's text reports do not say so";;
fork-trace)
    # A launcher (no CUDA call before the fork) forks a child that allocates:
    # each process writes its own trace, under its own pid.
    CUDAFRAG_TRACE=1 run fork-child-allocs
    [ "$(reports)" -eq 2 ] || fail "$(reports) reports, want 2"
    [ "$(ls "$dir" | grep -c '^r-[0-9]*\.cftrace$')" -eq 2 ] || fail "want one trace per process"
    for j in "$dir"/r-*.json; do
        t=${j%.json}.cftrace
        "$CLI" report --json "$t" >"$dir/replayed.json" 2>"$dir/replay.err" ||
            fail "cudafrag report $t: $(cat "$dir/replay.err")"
        [ "$(jq .summary.live_at_report_bytes "$dir/replayed.json")" = "$(jq .summary.live_at_report_bytes "$j")" ] ||
            fail "$t does not hold what its process's report says"
        [ "$(jq .program.pid "$dir/replayed.json")" = "$(jq .program.pid "$j")" ] || fail "$t: pid"
    done
    [ ! -s "$dir/err" ] || fail "unexpected stderr: $(cat "$dir/err")";;
fork-trace-after-cuda)
    # The child of a parent that used CUDA cannot continue its parent's trace
    # (its sites and live allocations are defined there): its report and
    # stderr say that it is not traced; the parent's trace is the parent's.
    CUDAFRAG_TRACE=1 run fork-after-cuda
    [ "$(reports)" -eq 2 ] || fail "$(reports) reports, want 2"
    [ "$(ls "$dir" | grep -c '\.cftrace$')" -eq 1 ] || fail "want only the parent's trace"
    cj=$(grep -l 777777 "$dir"/r-*.json)
    cpid=$(jq .program.pid "$cj")
    jq -e '.program.not_traced | test("^pid [0-9]+ is not traced: it was forked after its parent")' "$cj" >/dev/null ||
        fail "the child's JSON report does not say it is not traced"
    grep -q "^note: pid $cpid is not traced: it was forked after its parent (pid [0-9]*) used CUDA" "${cj%.json}.txt" ||
        fail "the child's text report does not say it is not traced"
    [ "$(grep -c "^cudafrag: pid $cpid is not traced: it was forked after its parent" "$dir/err")" -eq 1 ] ||
        fail "stderr does not say it once"
    "$CLI" report --json "$dir"/r-*.cftrace >"$dir/replayed.json" 2>"$dir/replay.err" ||
        fail "cudafrag report: $(cat "$dir/replay.err")"
    [ "$(jq .summary.live_at_report_bytes "$dir/replayed.json")" = 555555 ] ||
        fail "the parent's trace holds more than its allocation";;
*) fail "unknown mode";;
esac
exit 0
