#!/bin/sh
# trace_threads.sh CUDAFRAG LIBCUDAFRAG PROG ROUNDS: 8 threads allocate and free
# ROUNDS times each at once (fewer under a sanitizer, where each costs ten times);
# the trace, merged from their buffers by event order, replays to the same counts,
# peaks and footprint as the exit report, keeps the program's cudafrag_mark()
# markers in order, and costs at most 16 bytes per event.
set -u
cli=$1 lib=$2 prog=$3 rounds=$4
. "$(dirname "$0")/../lib.sh"
scratch
traced "$prog" threads "$rounds" >/dev/null 2>"$dir/err" || fail "$prog failed: $(cat "$dir/err")"
replayed replay.json --json
python3 - "$dir" "$rounds" <<'PY'
import json, os, sys
d, n = sys.argv[1], 8 * int(sys.argv[2])
a, b = json.load(open(f"{d}/r.json")), json.load(open(f"{d}/replay.json"))
bad = []
for k in ("allocs", "frees", "peak_live_bytes", "peak_footprint_bytes", "alloc_bytes"):
    if a["summary"][k] != b["summary"][k]:
        bad.append(f"summary.{k}: exit {a['summary'][k]} replay {b['summary'][k]}")
if a["summary"]["allocs"] != n:
    bad.append(f"{a['summary']['allocs']} allocations recorded, want {n}")
da, db = a["devices"][0], b["devices"][0]
for k in ("peak_footprint_bytes", "live_at_peak_footprint_bytes", "footprint_at_peak_live_bytes"):
    if da[k] != db[k]:
        bad.append(f"device.{k}: exit {da[k]} replay {db[k]}")
for name, r in (("exit", a), ("replayed", b)):
    labels = [m["label"] for m in r.get("marks", [])]
    if labels != ["threads start", "threads joined"]:
        bad.append(f"{name} report marks {labels}")
per_event = os.path.getsize(f"{d}/r.cftrace") / (2 * n)
if per_event > 16:
    bad.append(f"{per_event:.1f} bytes per event")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
