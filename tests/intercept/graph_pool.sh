#!/bin/sh
# graph_pool.sh PROGRAM: run it with the JSON report in a temporary directory and
# check the graph section: one alloc node of 24 MiB, pool high water >= 24 MiB.
set -eu
. "$(dirname "$0")/../lib.sh"
need python3
scratch
CUDAFRAG_OUTPUT="$dir/r" "$1"
python3 - "$dir/r.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["graph"]
assert g["alloc_nodes"] == 1, g
assert g["node_bytes"] == 24 << 20, g
devs = {d["device"]: d for d in g["devices"]}
assert 0 in devs, "graph pool of device 0 not sampled: %s" % g
assert devs[0]["reserved_high_bytes"] >= 24 << 20, g
assert devs[0]["used_high_bytes"] >= 24 << 20, g
PY
