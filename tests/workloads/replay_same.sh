#!/bin/sh
# replay_same.sh CUDAFRAG LIBCUDAFRAG WORKLOAD [ENV=VALUE...]: `cudafrag report
# TRACE --json` gives the report the process wrote at exit, field by field
# (compare_reports.py).
set -u
cli=$1 lib=$2 prog=$3
shift 3
. "$(dirname "$0")/../lib.sh"
scratch
traced "$@" "$prog" >/dev/null 2>"$dir/err"
[ -s "$dir/r.cftrace" ] || fail "no trace written: $(cat "$dir/err")"
replayed replay.json --json
replayed replay.txt
python3 "$(dirname "$0")/compare_reports.py" "$dir/r.json" "$dir/replay.json"
