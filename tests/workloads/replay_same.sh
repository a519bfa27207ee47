#!/bin/sh
# replay_same.sh CUDAFRAG LIBCUDAFRAG WORKLOAD [ENV=VALUE...]: `cudafrag report
# TRACE --json` gives the report the process wrote at exit, field by field: every
# number, count and flag is equal; only call-site names may differ (the command
# reads DWARF, the exiting process only symbol tables).
set -u
cli=$1 lib=$2 prog=$3
shift 3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
env "$@" CUDAFRAG_TRACE=1 LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 \
    "$prog" >/dev/null 2>"$dir/err"
[ -s "$dir/r.cftrace" ] || { echo "no trace written" >&2; cat "$dir/err" >&2; exit 1; }
"$cli" report --json "$dir/r.cftrace" >"$dir/replay.json" 2>"$dir/replay.err" ||
    { echo "cudafrag report failed" >&2; cat "$dir/replay.err" >&2; exit 1; }
"$cli" report "$dir/r.cftrace" >"$dir/replay.txt" 2>>"$dir/replay.err" || exit 1
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
a = json.load(open(f"{d}/r.json"))
b = json.load(open(f"{d}/replay.json"))
NAMES = {"frames", "label", "title", "advice", "where", "function", "file"}
bad = []
def walk(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if k in NAMES or path + "." + k == ".program.from_trace":
                continue
            if k not in x or k not in y:
                bad.append(f"{path}.{k}: only in {'exit' if k in x else 'replay'} report")
            else:
                walk(x[k], y[k], path + "." + k)
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            bad.append(f"{path}: {len(x)} vs {len(y)} entries")
        for i, (p, q) in enumerate(zip(x, y)):
            walk(p, q, f"{path}[{i}]")
    elif x != y:
        bad.append(f"{path}: exit {x!r} replay {y!r}")
walk(a, b, "")
if b["program"].get("from_trace") is not True:
    bad.append("the replayed report does not say it comes from a trace")
if a["summary"]["allocs"] == 0:
    bad.append("the workload made no allocation: nothing was compared")
for line in bad[:20]:
    print(line)
sys.exit(1 if bad else 0)
PY
