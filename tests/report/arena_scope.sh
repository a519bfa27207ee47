#!/bin/sh
# arena_scope.sh CUDAFRAG LIBCUDAFRAG PROGRAM: the "arena vs native" line holds the
# shadow model (which replays cudaMalloc/cuMemAlloc allocations) against what the
# native run held for those allocations, and says how much of the footprint it
# leaves out -- in the exit report and in the one `cudafrag report` makes from the
# trace.
set -u
cli=$1 lib=$2 prog=$3
. "$(dirname "$0")/../lib.sh"
need jq
scratch
on_fail() { cat "$dir/err" "$dir/r.txt"; }
MiB=1048576

# 64 MiB of cudaMalloc beside a 512 MiB stream-ordered allocation.
traced "$prog" 2>"$dir/err" || fail "program failed (status $?)"
json=$dir/r.json
[ "$(jq .arena_vs_native.native_modelled_peak_bytes "$json")" = $((64 * MiB)) ] ||
    fail "held against $(jq .arena_vs_native.native_modelled_peak_bytes "$json") bytes, not the cudaMalloc's 64 MiB"
left=$(jq .arena_vs_native.native_unmodelled_at_peak_bytes "$json")
[ "$left" -ge $((512 * MiB)) ] || fail "the pool's share left out is $left bytes"
[ "$(jq .devices[0].peak_footprint_bytes "$json")" -ge $((576 * MiB)) ] || fail "footprint"
grep -q "^  with --arena: ~6[0-9.]* MiB instead of 64.0 MiB (shadow model" "$dir/r.txt" ||
    fail "the estimate is not held against the cudaMalloc's pages"
grep -q "^  the model replays cudaMalloc and cuMemAlloc allocations only: the rest of the footprint (5[0-9.]* MiB of 5[0-9.]* MiB at its peak" "$dir/r.txt" ||
    fail "does not say what the model leaves out"
# The report made from the trace says the same.
replayed replay.txt
sed -n '/^-- arena vs native --$/,/^$/p' "$dir/r.txt" >"$dir/exit.arena"
sed -n '/^-- arena vs native --$/,/^$/p' "$dir/replay.txt" >"$dir/replay.arena"
[ -s "$dir/exit.arena" ] || fail "no arena section"
cmp -s "$dir/exit.arena" "$dir/replay.arena" ||
    fail "the trace's report differs: $(diff "$dir/exit.arena" "$dir/replay.arena")"

# cudaMalloc alone: the footprint is all modelled, and no second line.
rm -f "$dir"/r.*
profiled "$prog" raw-only 2>"$dir/err" || fail "program failed (status $?)"
[ "$(jq .arena_vs_native.native_unmodelled_at_peak_bytes "$dir/r.json")" = 0 ] ||
    fail "raw-only: something left out"
grep -q "^  with --arena: ~6[0-9.]* MiB instead of 64.0 MiB (shadow model" "$dir/r.txt" ||
    fail "raw-only: no estimate against 64 MiB"
grep -q "the model replays" "$dir/r.txt" && fail "raw-only: says the model leaves memory out"
exit 0
