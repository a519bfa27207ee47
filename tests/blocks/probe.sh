#!/bin/sh
# Usage: probe.sh ASYNC_POOL_PROBE
# The pool probe on the simulated device: every scenario --list names runs, every
# row is well formed, every call succeeds (busy launches nothing here: -1), and
# a pool never uses more than it reserves.
set -u
probe=$1
. "$(dirname "$0")/../lib.sh"
scratch
out=$dir/probe.csv
"$probe" >"$out" || fail "status $?"
head -1 "$out" | grep -q '^# device 0: .*memory pools yes$' || fail "no device line: $(head -1 "$out")"
sed -n 2p "$out" | grep -qx 'scenario,step,op,stream,bytes,arg,result,address,offset,reserved_current,reserved_high,used_current,used_high' ||
    fail "header: $(sed -n 2p "$out")"
bad=$(awk -F, 'NR > 2 && (NF != 13 || ($3 == "busy" ? $7 != -1 : $7 != 0) || $10 + 0 < $12 + 0 ||
               $11 + 0 < $10 + 0 || ($3 == "alloc") != ($8 != ""))' "$out" | head -3)
[ -z "$bad" ] || fail "rows: $bad"
for s in $("$probe" --list | awk '{print $1}'); do
    case $s in
    growth) pat='^growth-1073741824,';;
    cross-chunk) pat='^cross-chunk-';;
    placement) pat='^placement-';;
    release) pat='^threshold-0,';;
    streams) pat='^streams-internal-deps,';;
    *) pat="^$s,";;
    esac
    grep -q "$pat" "$out" || fail "scenario $s wrote no rows"
done
# One scenario alone, and an unknown one refused.
"$probe" --scenario default-pool | awk -F, 'NR > 2 && $1 != "default-pool"' | grep -q . &&
    fail "--scenario default-pool ran others"
"$probe" --scenario nonesuch 2>/dev/null; [ $? -eq 2 ] || fail "unknown scenario not refused"
exit 0
