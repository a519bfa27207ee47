#!/bin/sh
# api.sh CUDAFRAG LIBCUDAFRAG PYDIR: the Python package's face of the C API on the
# simulated device (regions.py): regions' exact peaks, nested and repeated; the
# report's regions section (text and JSON) and the trace's region markers; and
# without the profiler, one warning for the no-ops and NotLoadedError for the
# measurements; the %%cudafrag magic (magic.py).
set -u
cli=$1 lib=$2 pydir=$3
here=$(dirname "$0")
. "$here/../lib.sh"
need python3
scratch
on_fail() { sed -n '/-- regions/,/^$/p' "$dir/r.txt" 2>/dev/null; }
export PYTHONPATH="$pydir"

t_case=profiled
traced python3 "$here/regions.py" profiled || fail "regions.py failed under cudafrag"
for r in grow small outer inner decorated; do
    grep -qE "^ +0 +[0-9]+ +[0-9.]+ [KMG]?i?B +[0-9.]+ [KMG]?i?B +$r\$" "$dir/r.txt" ||
        fail "the text report's regions section has no row for $r"
done
grep -q "^-- regions (5) --" "$dir/r.txt" || fail "the text report has no regions section of 5"
python3 - "$dir/r.json" <<'PY' || fail "JSON: the regions' figures are wrong"
import json, sys
MIB = 1 << 20
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))["regions"]}
want = {"grow": (1, 18), "small": (2, 11), "outer": (1, 13), "inner": (1, 13), "decorated": (1, 10)}
for name, (runs, live) in want.items():
    r = rows[name]
    assert (r["device"], r["runs"], r["peak_live_bytes"]) == (0, runs, live * MIB), r
    assert r["peak_footprint_bytes"] >= r["peak_live_bytes"], r
assert len(rows) == len(want), rows
PY

t_case=trace
replayed replay.txt
grep -qE "  region: device 0 peak live 18.0 MiB, footprint 1[0-9.]+ MiB: grow\$" "$dir/replay.txt" ||
    fail "the trace has no marker with the region's figures"

t_case=bare
python3 "$here/regions.py" bare || fail "regions.py failed without cudafrag"
t_case=magic
PATH="$(dirname "$cli"):$PATH" python3 "$here/magic.py" "$dir/stub" >"$dir/magic.txt" 2>&1 ||
    fail "the magic failed: $(tail -5 "$dir/magic.txt")"
grep -q "^cell ran\$" "$dir/magic.txt" || fail "the cell's output is not shown"
echo "ok: regions exact, reported and traced; without the profiler no-ops warn once, measurements raise"
