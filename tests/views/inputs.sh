#!/bin/sh
# inputs.sh CUDAFRAG LIBCUDAFRAG PROG CASE: what diff, merge and check do with
# inputs they cannot use. PROG: a workload, traced here.
#   unreadable: a trace cut after 17 bytes is refused with one message and
#     status 2 (check) or 1 (diff, merge), and nothing is freed that was never
#     allocated: under valgrind (memcheck, children followed), where installed;
#     without it, the statuses and messages alone.
#   merge-twice: merge refuses the same file twice, two files of one run and
#     two runs of the same rank (merged, one warning line naming both files), and
#     warns once when the ranks ran different programs.
set -u
cli=$1 lib=$2 prog=$3 case=$4
t_case=$case
. "$(dirname "$0")/../lib.sh"
scratch
err=$dir/err

# expect STATUS PATTERN CMD...: CMD's status is STATUS and its stderr has PATTERN.
expect() {
    want=$1 pattern=$2
    shift 2
    "$@" >"$dir/out" 2>"$err"
    rc=$?
    [ "$rc" -eq "$want" ] || fail "$*: status $rc, want $want: $(cat "$err")"
    grep -q -- "$pattern" "$err" || fail "$*: stderr lacks \"$pattern\": $(cat "$err")"
}

traced "$prog" -n 20 >/dev/null 2>&1 || fail "the workload failed"
trace=$dir/r.cftrace
case $case in
unreadable)
    head -c 17 "$trace" >"$dir/cut.cftrace"
    run=
    # Not under ASan, which valgrind cannot run (and which finds a bad free itself).
    if command -v valgrind >/dev/null 2>&1 && [ -z "${ASAN_OPTIONS:-}" ]; then
        run="valgrind -q --error-exitcode=99 --trace-children=no --child-silent-after-fork=no
             --log-file=$dir/vg.%p.log"
    else
        echo "valgrind not found: statuses and messages only" >&2
    fi
    for c in "check $dir/cut.cftrace --max-leak 0" "diff $trace $dir/cut.cftrace" \
             "diff $dir/cut.cftrace $trace" "merge $trace $dir/cut.cftrace"; do
        set -- $c
        # An unreadable input is a failure (1), as a damaged one: one line says why.
        expect 1 "cut.cftrace: header cut short" $run "$cli" "$@"
        [ "$(wc -l <"$err")" -eq 1 ] || fail "$c: not one line: $(cat "$err")"
        for log in "$dir"/vg.*.log; do
            [ -s "$log" ] || continue
            cat "$log" >&2
            fail "$c: valgrind reported errors"
        done
    done;;
merge-twice)
    cp "$trace" "$dir/copy.cftrace"
    mkdir "$dir/b"
    env RANK=1 LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/b/r" CUDAFRAG_STDERR=0 CUDAFRAG_TRACE=1 \
        "$prog" -n 20 >/dev/null 2>&1 || fail "the rank 1 run failed"
    ln -s "$dir/r.json" "$dir/link.json"
    expect 2 "r.json and .*r.json are the same file: give each rank once" \
        "$cli" merge "$dir/r.json" "$dir/b/r.json" "$dir/r.json"
    expect 2 "r.json and .*link.json are the same file" "$cli" merge "$dir/r.json" "$dir/link.json"
    expect 2 "r.cftrace and .*copy.cftrace are of one run (pid [0-9]* on " \
        "$cli" merge "$trace" "$dir/copy.cftrace"
    expect 2 "are of one run" "$cli" merge --json "$dir/r.json" "$trace"
    # Another run that says it is rank 0 too (the default without RANK).
    mkdir "$dir/c"
    env LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/c/r" CUDAFRAG_STDERR=0 "$prog" -n 20 \
        >/dev/null 2>&1 || fail "the second rank 0 run failed"
    # Merged (separate runs without RANK all say rank 0), with one warning line.
    "$cli" merge "$dir/r.json" "$dir/c/r.json" >"$dir/out" 2>"$err" || fail "$(cat "$err")"
    grep -q "2 ranks" "$dir/out" || fail "not merged: $(cat "$dir/out")"
    [ "$(wc -l <"$err")" -eq 1 ] &&
        grep -q "warning: .*r.json and .*c/r.json are both rank 0 (separate runs" "$err" ||
        fail "not one warning naming both files: $(cat "$err")"
    # Two ranks of one program: merged, no warning.
    "$cli" merge "$dir/r.json" "$dir/b/r.cftrace" >"$dir/out" 2>"$err" || fail "$(cat "$err")"
    grep -q "2 ranks" "$dir/out" || fail "not merged: $(cat "$dir/out")"
    [ ! -s "$err" ] || fail "a warning for ranks of one program: $(cat "$err")"
    # Ranks of different programs: merged, one warning.
    mkdir "$dir/d"
    cp "$prog" "$dir/d/other_program"
    env RANK=2 LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/d/r" CUDAFRAG_STDERR=0 \
        "$dir/d/other_program" -n 20 >/dev/null 2>&1 || fail "the other program failed"
    "$cli" merge "$dir/r.json" "$dir/b/r.json" "$dir/d/r.json" >"$dir/out" 2>"$err" ||
        fail "$(cat "$err")"
    grep -q "3 ranks" "$dir/out" || fail "not merged: $(cat "$dir/out")"
    [ "$(grep -c "warning: the reports are of different programs" "$err")" -eq 1 ] &&
        [ "$(wc -l <"$err")" -eq 1 ] || fail "not one warning: $(cat "$err")"
    grep -q "other_program in .*d/r.json" "$err" || fail "the warning: $(cat "$err")";;
*) fail "unknown case";;
esac
exit 0
