#!/bin/sh
# workload_replay.sh CUDAFRAG LIBCUDAFRAG CHECKER RAW_ONLY [ENV=VALUE...] PROG [ARGS...]:
# runs PROG traced, then `cudafrag replay` on its trace: twice (the same bytes
# both times), with every model's invariants checked after every operation,
# with a sweep, and as text; CHECKER holds the figures against the exit report.
# RAW_ONLY=1: PROG allocates device memory with cudaMalloc alone.
set -u
cli=$1 lib=$2 checker=$3 raw=$4
shift 4
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped" >&2; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
# The exit status is the workload's business (an out-of-memory workload fails on purpose).
env CUDAFRAG_TRACE=1 LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/r" CUDAFRAG_STDERR=0 "$@" \
    >/dev/null 2>"$dir/err"
[ -s "$dir/r.cftrace" ] || { echo "no trace written" >&2; cat "$dir/err" >&2; exit 1; }
replay() { # output-file args...
    out=$1
    shift
    "$cli" replay "$@" "$dir/r.cftrace" >"$dir/$out" 2>"$dir/$out.err" ||
        { echo "cudafrag replay $* failed" >&2; cat "$dir/$out.err" >&2; exit 1; }
}
replay a.json --json
replay b.json --json
replay checked.json --json --check=7
cmp -s "$dir/a.json" "$dir/b.json" ||
    { echo "two replays of one trace differ" >&2; diff "$dir/a.json" "$dir/b.json" >&2; exit 1; }
replay sweep.json --json --model pytorch --model async-pool \
    --sweep max_split_size_mb=20,64,256 --sweep release_threshold=0,64M,max
replay table.txt
replay small.json --json --device-memory 64M
for want in lower-bound driver pytorch async-pool arena "peak footprint"; do
    grep -q "$want" "$dir/table.txt" || { echo "the table has no \"$want\"" >&2; exit 1; }
done
python3 "$checker" "$dir/r.json" "$dir/checked.json" "$dir/sweep.json" "$dir/small.json" "$raw"
