#!/bin/sh
# trace_killed.sh CUDAFRAG LIBCUDAFRAG PROG: a process killed with SIGKILL leaves a
# trace that reads up to its last flush: `cudafrag report` counts every
# allocation made before the flush and says the process did not exit normally.
set -u
cli=$1 lib=$2 prog=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
CUDAFRAG_TRACE=1 CUDAFRAG_TRACE_FLUSH_MS=20 LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/r" \
    "$prog" killed 1000 >"$dir/out" 2>"$dir/err" &
pid=$!
for i in $(seq 400); do grep -q ready "$dir/out" && break; sleep 0.05; done
grep -q ready "$dir/out" || { echo "the program did not start" >&2; kill -9 $pid; exit 1; }
# Killed once the trace holds every event (the flush thread writes them within
# a few intervals; a loaded machine may take longer, so wait for it, bounded).
flushed() {
    "$cli" report --json "$dir/r.cftrace" 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)["summary"]
sys.exit(0 if (s["allocs"], s["frees"]) == (1000, 500) else 1)'
}
n=0
until flushed; do
    n=$((n + 1))
    [ $n -lt 400 ] || { echo "the trace never held all 1500 events" >&2; kill -9 $pid; exit 1; }
    sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null
[ ! -e "$dir/r.txt" ] || { echo "a killed process wrote a report?" >&2; exit 1; }
"$cli" report --json "$dir/r.cftrace" >"$dir/r.json" 2>"$dir/report.err" ||
    { echo "cudafrag report failed on the killed trace" >&2; cat "$dir/report.err" >&2; exit 1; }
grep -q "did not exit normally" "$dir/report.err" ||
    { echo "no word that the process did not exit normally" >&2; cat "$dir/report.err" >&2; exit 1; }
python3 - "$dir/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s, d = r["summary"], r["devices"][0]
ok = s["allocs"] == 1000 and s["frees"] == 500 and d["live_bytes"] == 500 << 20
ok = ok and d["peak_footprint_bytes"] >= 500 << 20 and r["reason"] == "end of trace"
if not ok:
    print("killed trace:", s["allocs"], s["frees"], d["live_bytes"], d["peak_footprint_bytes"], r["reason"])
sys.exit(0 if ok else 1)
PY
