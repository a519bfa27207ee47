#!/bin/sh
# live_peak_pool.sh CUDAFRAG LIBCUDAFRAG PROGRAM: the pool growth that served an
# allocation counts at the allocation's instant. One cudaMallocAsync of 1 MiB:
# at the live peak the footprint is the pool's growth (not 0 B and "nan%"), the
# footprint peak has that 1 MiB live, in the text and the JSON the process wrote
# and in the ones `cudafrag report TRACE` makes from its trace.
set -u
cli=$1 lib=$2 prog=$3
. "$(dirname "$0")/../lib.sh"
need jq
scratch
on_fail() { cat "$dir/err" "$dir/r.txt"; }
MiB=1048576

traced "$prog" 2>"$dir/err" || fail "program failed (status $?)"
replayed replay.txt
replayed replay.json --json
for src in r replay; do
    t_case=$src
    txt=$dir/$src.txt json=$dir/$src.json
    grep -q "nan" "$txt" && fail "the text says nan: $(grep nan "$txt")"
    dev=$(jq -c '.devices[0]' "$json")
    reserved=$(jq '[.pools[] | .reserved_high_bytes] | max' "$json")
    [ "$reserved" -gt 0 ] || fail "no pool growth was read"
    [ "$(echo "$dev" | jq .peak_live_bytes)" = $MiB ] || fail "peak live"
    [ "$(echo "$dev" | jq .footprint_at_peak_live_bytes)" = "$reserved" ] ||
        fail "footprint at the live peak $(echo "$dev" | jq .footprint_at_peak_live_bytes), not the pool's $reserved"
    [ "$(echo "$dev" | jq .live_at_peak_footprint_bytes)" = $MiB ] ||
        fail "live at the footprint peak $(echo "$dev" | jq .live_at_peak_footprint_bytes), not 1 MiB"
    echo "$dev" | jq -e '.fragmentation_at_peak_live | type == "number"' >/dev/null ||
        fail "fragmentation_at_peak_live is not a number"
    [ "$(echo "$dev" | jq .peak_live_at_s)" = "$(echo "$dev" | jq .peak_footprint_at_s)" ] ||
        fail "the growth and the allocation it served are not one instant"
    pct=$(echo "$dev" | jq '1000 * (1 - 1048576 / .footprint_at_peak_live_bytes) | round / 10')
    grep -q "; at the live peak $pct% (footprint [0-9.]* MiB)\$" "$txt" ||
        fail "the text's live peak: $(grep 'at the live peak' "$txt")"
done
exit 0
