#!/bin/sh
# Usage: threads_mixed.sh LIBCUDAFRAG PROGRAM ROUNDS
# Runs the mixed-threads program under the preloaded library and checks that the
# final JSON report agrees with what the program knows it did: every call counted,
# every free matched to its allocation, exactly the unfreed allocations live.
set -u
lib=$1 prog=$2 rounds=$3
. "$(dirname "$0")/../lib.sh"
need jq
scratch

profiled "$prog" "$rounds" >"$dir/expect" ||
    fail "program failed (status $?)"
json=$dir/r.json
[ -s "$json" ] || fail "no JSON report"
want() { awk -v k="$1" '$1 == k { print $2 }' "$dir/expect"; }
got() { jq -r "$1" "$json"; }

ops=$(want ops)
[ "$ops" -ge 1000000 ] || [ "$rounds" -lt 3125 ] || fail "only $ops operations"
while read -r kw api n; do
    [ "$kw" = api ] || continue
    c=$(got ".apis[] | select(.name == \"$api\") | .calls")
    [ "$c" = "$n" ] || fail "$api: report says $c calls, the program made $n"
done <"$dir/expect"

allocs=$(awk '$1 == "api" && $2 ~ /^(cudaMalloc|cudaMallocAsync|cudaMallocFromPoolAsync|cuMemCreate|cudaMallocHost)$/ { s += $3 } END { print s }' "$dir/expect")
frees=$(awk '$1 == "api" && $2 ~ /^(cudaFree|cudaFreeAsync|cuMemRelease|cudaFreeHost)$/ { s += $3 } END { print s }' "$dir/expect")
[ "$(got .summary.allocs)" = "$allocs" ] || fail "allocs $(got .summary.allocs), want $allocs"
# A free recorded against the wrong allocation shows up here: the address was
# handed to another thread before the first free was recorded.
[ "$(got .summary.unknown_frees)" = 0 ] || fail "$(got .summary.unknown_frees) frees of unknown pointers"
[ "$(got .summary.replaced_live)" = 0 ] || fail "$(got .summary.replaced_live) live allocations replaced"
[ "$(got .summary.frees)" = "$frees" ] || fail "frees $(got .summary.frees), want $frees"

[ "$(want seen_live_device_bytes)" = "$(want live_device_bytes)" ] ||
    fail "cudafrag_live_bytes(0) said $(want seen_live_device_bytes) before exit, want $(want live_device_bytes)"
live=$(( $(want live_device_bytes) + $(want live_host_bytes) ))
[ "$(got .summary.live_at_report_bytes)" = "$live" ] ||
    fail "live at exit $(got .summary.live_at_report_bytes) bytes, want $live"
[ "$(got .summary.live_at_report_count)" = "$(want live_count)" ] ||
    fail "live at exit $(got .summary.live_at_report_count) allocations, want $(want live_count)"
[ "$(got .summary.host_live_bytes)" = "$(want live_host_bytes)" ] ||
    fail "host live $(got .summary.host_live_bytes), want $(want live_host_bytes)"
leaked=$(got '[.live_at_report[].count] | add')
[ "$leaked" = "$(want live_count)" ] || fail "leak table lists $leaked allocations"
exit 0
