#!/bin/sh
# fits.sh CUDAFRAG TRACES: on a device too small for every model, `cudafrag
# replay` names no best model and says that none fits, as text, as JSON
# ("best": null, "no_model_fits": true) and in the HTML what-if table; where
# some fit, the best is one of those, never one that ran out (whose peak is low
# because it stopped). TRACES: the committed traces (tests/replay/traces).
set -u
cli=$1 traces=$2
. "$(dirname "$0")/../lib.sh"
need python3
scratch
trace=$traces/video_pipeline.cftrace
t_case=text
# 40 MiB: below the peak live (76.6 MiB); async-pool stops at 64 MiB, the lowest peak.
"$cli" replay --device-memory 40M "$trace" >"$dir/t.txt" 2>/dev/null || fail "status $?"
grep -q "^  best: none: no model fits in 40.0 MiB of device memory$" "$dir/t.txt" ||
    fail "no 'no model fits' line: $(grep best "$dir/t.txt")"
"$cli" replay --device-memory 1 "$trace" >"$dir/one.txt" 2>/dev/null || fail "status $?"
grep -q "^  best: none: no model fits in 1 B of device memory$" "$dir/one.txt" ||
    fail "1 B: $(grep best "$dir/one.txt")"
t_case=json
json() { # options... : "best no_model_fits" of device 0
    "$cli" replay --json "$@" >"$dir/j.json" 2>/dev/null || fail "status $?"
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
ran = [m for m in d["models"] if m["model"] != "lower-bound" and "error" not in m]
best = [m for m in ran if m["label"] == d["best"]]
if best and best[0]["oom"] is not None:
    sys.exit("best %s ran out of memory" % d["best"])
print(d["best"], d["no_model_fits"])' "$dir/j.json" || fail "$(cat "$dir/j.json")"
}
got=$(json --device-memory 40M "$trace")
[ "$got" = "None True" ] || fail "40 MiB: best, no_model_fits = $got"
got=$(json --device-memory 60M "$traces/detector_mix.cftrace")
[ "$got" = "arena False" ] || fail "60 MiB, detector_mix: best, no_model_fits = $got"
got=$(json "$trace")
[ "$got" = "arena False" ] || fail "memory from the trace: best, no_model_fits = $got"
t_case=html
"$cli" report --html "$dir/p.html" --device-memory 40M "$trace" 2>/dev/null || fail "status $?"
grep -q 'no model fits in 40.0 MiB of device memory' "$dir/p.html" || fail "no 'no model fits'"
! grep -q 'class="best"' "$dir/p.html" || fail "a row is marked best"
exit 0
