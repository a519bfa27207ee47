#!/bin/sh
# Usage: arena_reserve.sh LIBCUDAFRAG PROGRAM CASE
# Extreme CUDAFRAG_ARENA_RESERVE values: when the arena model cannot replay the
# run, the report says so and gives no figure from it; when the arena cannot
# serve every allocation, the report says that its figures cover only part of
# the run. PROGRAM peaks at 16 allocations of 1 MiB.
set -u
lib=$1 prog=$2 case=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL ($case): $*" >&2; cat "$dir/err" "$dir/r.txt" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not installed" >&2; exit 77; }
export CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 LD_PRELOAD="$lib"

run() {
    CUDAFRAG_ARENA_RESERVE=$1 "$prog" 2>"$dir/err"; rc=$?
    [ $rc -eq 0 ] || fail "status $rc"
    grep -q "recording degrades" "$dir/err" && fail "says recording degrades; it did not"
    shadow=$(jq -c .arena_vs_native.shadow "$dir/r.json") || fail "no JSON report"
}
# The model failed: no estimate in the text, null figures and the reason in JSON.
model_failed() {
    grep -q "with --arena: ~" "$dir/r.txt" && fail "an estimate from a model that failed"
    grep -q "^  shadow arena model failed: $1" "$dir/r.txt" || fail "does not say why the model failed"
    [ "$(echo "$shadow" | jq .failed)" = true ] || fail "JSON: failed is not true"
    echo "$shadow" | jq -e '.failure | type == "string"' >/dev/null || fail "JSON: no failure reason"
    for k in peak_live_bytes peak_mapped_bytes fragmentation_at_peak external_fragmentation_at_peak; do
        [ "$(echo "$shadow" | jq ".$k")" = null ] || fail "JSON: $k is not null"
    done
}

case $case in
default)
    run 0
    grep -q "with --arena: ~" "$dir/r.txt" || fail "no estimate"
    [ "$(echo "$shadow" | jq .failed)" = false ] || fail "JSON: failed is not false"
    [ "$(echo "$shadow" | jq .peak_live_bytes)" = 16777216 ] || fail "JSON: peak live";;
small)
    run 4M
    model_failed "[0-9]* of 16 allocations did not fit in its range of 4.00 MiB (CUDAFRAG_ARENA_RESERVE)"
    [ "$(echo "$shadow" | jq .ooms)" -gt 0 ] || fail "JSON: no failed allocations";;
huge)
    run 16777215T
    model_failed "a range of [0-9.]* [KMGTP]iB (CUDAFRAG_ARENA_RESERVE) is more than it can model"
    grep -q "no device allocation to replay" "$dir/r.txt" && fail "says there was nothing to replay";;
arena-small)
    # The arena itself: what does not fit goes to CUDA, and the report says so.
    CUDAFRAG_ARENA=1 run 4M
    grep -q "^  [0-9]* allocations did not fit in the arena and went to CUDA directly; the figures above cover only the [0-9]* it served$" \
        "$dir/r.txt" || fail "does not say the arena served only part of the run"
    [ "$(jq .arena_vs_native.arena.ooms "$dir/r.json")" -gt 0 ] || fail "JSON: no arena OOMs";;
*) fail "unknown case";;
esac
exit 0
