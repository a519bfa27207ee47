#!/bin/sh
# trace_killed.sh CUDAFRAG LIBCUDAFRAG PROG: a process killed with SIGKILL leaves a
# trace that reads up to its last flush: `cudafrag report` counts every
# allocation made before the flush and says the process did not exit normally.
set -u
cli=$1 lib=$2 prog=$3
. "$(dirname "$0")/../lib.sh"
scratch
# A simple command, not the traced function: $! must be the program itself
# (env execs it), or kill -9 ends a subshell and leaves the program running.
env LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 CUDAFRAG_TRACE=1 \
    CUDAFRAG_TRACE_FLUSH_MS=20 "$prog" killed 1000 >"$dir/out" 2>"$dir/err" &
pid=$!
on_fail() { kill -9 $pid 2>/dev/null; }
for i in $(seq 400); do grep -q ready "$dir/out" && break; sleep 0.05; done
grep -q ready "$dir/out" || fail "the program did not start"
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
    [ $n -lt 400 ] || fail "the trace never held all 1500 events"
    sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null
on_fail() { :; }
[ ! -e "$dir/r.txt" ] || fail "a killed process wrote a report?"
replayed r.json --json
grep -q "did not exit normally" "$dir/r.json.err" ||
    fail "no word that the process did not exit normally: $(cat "$dir/r.json.err")"
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
