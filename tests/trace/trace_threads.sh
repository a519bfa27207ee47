#!/bin/sh
# trace_threads.sh CUDAFRAG LIBCUDAFRAG PROG: 8 threads allocate and free at once;
# the trace, merged from their buffers by event order, replays to the same counts,
# peaks and footprint as the exit report, keeps the program's cudafrag_mark()
# markers in order, and costs at most 16 bytes per event.
set -u
cli=$1 lib=$2 prog=$3
. "$(dirname "$0")/../lib.sh"
scratch
traced "$prog" threads 20000 >/dev/null 2>"$dir/err" || fail "$prog failed: $(cat "$dir/err")"
replayed replay.json --json
python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
a, b = json.load(open(f"{d}/r.json")), json.load(open(f"{d}/replay.json"))
bad = []
for k in ("allocs", "frees", "peak_live_bytes", "peak_footprint_bytes", "alloc_bytes"):
    if a["summary"][k] != b["summary"][k]:
        bad.append(f"summary.{k}: exit {a['summary'][k]} replay {b['summary'][k]}")
if a["summary"]["allocs"] != 160000:
    bad.append(f"{a['summary']['allocs']} allocations recorded, want 160000")
da, db = a["devices"][0], b["devices"][0]
for k in ("peak_footprint_bytes", "live_at_peak_footprint_bytes", "footprint_at_peak_live_bytes"):
    if da[k] != db[k]:
        bad.append(f"device.{k}: exit {da[k]} replay {db[k]}")
for name, r in (("exit", a), ("replayed", b)):
    labels = [m["label"] for m in r.get("marks", [])]
    if labels != ["threads start", "threads joined"]:
        bad.append(f"{name} report marks {labels}")
per_event = os.path.getsize(f"{d}/r.cftrace") / (2 * 160000)
if per_event > 16:
    bad.append(f"{per_event:.1f} bytes per event")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
