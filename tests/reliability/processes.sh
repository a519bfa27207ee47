#!/bin/sh
# Usage: processes.sh LIBCUDAFRAG PROGRAM MODE
# Which processes write reports: one per process that used CUDA (forked or
# executed children included), none for processes that did not (the shell in
# between), only the parent's with CUDAFRAG_CHILDREN=0.
set -u
lib=$1 prog=$2 mode=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL ($mode): $*" >&2; ls -la "$dir" >&2; cat "$dir/err" >&2; exit 1; }
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
*) fail "unknown mode";;
esac
exit 0
