#!/bin/sh
# footprint_exact.sh LIBCUDAFRAG WORKLOAD EXPECTED_EXIT [ENV=VALUE...]: the peak
# footprint cudafrag reports for each device equals the simulated device's own
# peak of physical memory (SIMCUDA_STATS_OUT), byte for byte, and is never
# "unknown"; a workload that prints its own cudaMemGetInfo peak agrees too.
set -u
lib=$1 prog=$2 want_rc=$3
shift 3
. "$(dirname "$0")/../lib.sh"
scratch
on_fail() { cat "$dir/err"; }
profiled "$@" SIMCUDA_STATS_OUT="$dir/sim" "$prog" >"$dir/out" 2>"$dir/err"
rc=$?
[ "$rc" -eq "$want_rc" ] || fail "exit status $rc, want $want_rc"
python3 - "$dir" <<'PY'
import json, re, sys
d = sys.argv[1]
sim = {}
for line in open(f"{d}/sim"):
    f = line.split()
    sim[int(f[1])] = int(f[3]) * int(f[7])
rep = json.load(open(f"{d}/r.json"))
devs = {x["device"]: x for x in rep["devices"]}
bad = 0
for dev, peak in sim.items():
    if peak == 0 and dev not in devs:
        continue
    got = devs.get(dev, {}).get("peak_footprint_bytes")
    if got != peak:
        print(f"device {dev}: cudafrag peak footprint {got}, simulated device peak {peak}")
        bad += 1
    frag = devs.get(dev, {}).get("fragmentation")
    if frag is None:
        print(f"device {dev}: fragmentation unknown")
        bad += 1
m = re.search(r"peak used above start (\d+)", open(f"{d}/out").read())
if m and int(m.group(1)) != sim.get(0):
    print(f"the program's own cudaMemGetInfo peak {m.group(1)} != simulated peak {sim.get(0)}")
    bad += 1
summary = open(f"{d}/r.txt").read().split("-- API calls --")[0]
for line in summary.splitlines():
    if ("footprint" in line or "fragmentation" in line) and "unknown" in line:
        print("the summary says unknown:", line)
        bad += 1
sys.exit(1 if bad else 0)
PY
