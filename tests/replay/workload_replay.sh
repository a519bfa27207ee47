#!/bin/sh
# workload_replay.sh CUDAFRAG LIBCUDAFRAG CHECKER RAW_ONLY [ENV=VALUE...] PROG [ARGS...]:
# runs PROG traced, then `cudafrag replay` on its trace: twice (the same bytes
# both times), with every model's invariants checked after every operation,
# with a sweep, and as text; CHECKER holds the figures against the exit report.
# RAW_ONLY=1: PROG allocates device memory with cudaMalloc alone.
set -u
cli=$1 lib=$2 checker=$3 raw=$4
shift 4
. "$(dirname "$0")/../lib.sh"
need python3
scratch
# The exit status is the workload's business (an out-of-memory workload fails on purpose).
traced "$@" >/dev/null 2>"$dir/err"
[ -s "$dir/r.cftrace" ] || fail "no trace written: $(cat "$dir/err")"
replay() { # output-file args...
    out=$1
    shift
    "$cli" replay "$@" "$dir/r.cftrace" >"$dir/$out" 2>"$dir/$out.err" ||
        fail "cudafrag replay $* failed: $(cat "$dir/$out.err")"
}
replay a.json --json
replay b.json --json
replay checked.json --json --check=7
cmp -s "$dir/a.json" "$dir/b.json" ||
    fail "two replays of one trace differ: $(diff "$dir/a.json" "$dir/b.json")"
replay sweep.json --json --model pytorch --model async-pool \
    --sweep max_split_size_mb=20,64,256 --sweep release_threshold=0,64M,max
replay table.txt
replay small.json --json --device-memory 64M
for want in lower-bound driver pytorch async-pool arena "peak footprint"; do
    grep -q "$want" "$dir/table.txt" || fail "the table has no \"$want\""
done
python3 "$checker" "$dir/r.json" "$dir/checked.json" "$dir/sweep.json" "$dir/small.json" "$raw"
