#!/bin/sh
# replay_same.sh CUDAFRAG LIBCUDAFRAG WORKLOAD [ENV=VALUE...]: `cudafrag report
# TRACE --json` gives the report the process wrote at exit, field by field
# (compare_reports.py).
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
python3 "$(dirname "$0")/compare_reports.py" "$dir/r.json" "$dir/replay.json"
