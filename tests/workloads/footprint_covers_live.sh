#!/bin/sh
# footprint_covers_live.sh CUDAFRAG LIBCUDAFRAG WORKLOAD [ENV=VALUE...]: a device
# holds at least what is live on it, at every instant: every counter sample of the
# trace's Chrome export has footprint >= live, and the reports (the exit one and
# the one made from the trace) have the footprint at the live peak >= the live
# peak, with no "nan" in the text.
set -u
cli=$1 lib=$2 prog=$3
shift 3
. "$(dirname "$0")/../lib.sh"
scratch
on_fail() { cat "$dir/err"; }
# The status is the workload's (oom_fragment's is 3 by design): the trace is what counts.
traced "$@" "$prog" >/dev/null 2>"$dir/err"
[ -s "$dir/r.cftrace" ] || fail "no trace written"
"$cli" export "$dir/r.cftrace" --format chrome-trace -o "$dir/chrome.json" 2>>"$dir/err" ||
    fail "export failed"
replayed replay.json --json
replayed replay.txt
grep -l nan "$dir/r.txt" "$dir/replay.txt" && fail "a report says nan"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
samples = bad = 0
for e in json.load(open(f"{d}/chrome.json"))["traceEvents"]:
    a = e.get("args", {})
    if e.get("ph") != "C" or "live" not in a:
        continue
    samples += 1
    if a["footprint"] < a["live"]:
        if bad < 5:
            print(f"at {e['ts']} us: live {a['live']} > footprint {a['footprint']}")
        bad += 1
if samples == 0:
    print("no counter sample in the export")
    sys.exit(1)
for name in ("r.json", "replay.json"):
    for dev in json.load(open(f"{d}/{name}"))["devices"]:
        if dev["footprint_at_peak_live_bytes"] < dev["peak_live_bytes"]:
            print(f"{name}: device {dev['device']}: footprint at the live peak "
                  f"{dev['footprint_at_peak_live_bytes']} < peak live {dev['peak_live_bytes']}")
            bad += 1
        if dev["peak_footprint_bytes"] < dev["live_at_peak_footprint_bytes"]:
            print(f"{name}: device {dev['device']}: peak footprint below its live bytes")
            bad += 1
if bad:
    print(f"{bad} of {samples} samples or figures have live > footprint")
sys.exit(1 if bad else 0)
PY
