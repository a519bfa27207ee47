#!/bin/sh
# Usage: run.sh CUDAFRAG LIBCUDAFRAG TRACE_PROG SIM_DIR
# What a trace costs and how fast `cudafrag report` reads one: TRACE_PROG's
# "threads" mode (8 threads allocating and freeing at once) writes a trace of
# EVENTS events (default 10 million); the table shows the file's bytes per event
# and the wall time and peak memory (max RSS) of `cudafrag report` on it.
set -eu
[ $# -eq 4 ] || { echo "usage: $0 CUDAFRAG LIBCUDAFRAG TRACE_PROG SIM_DIR" >&2; exit 2; }
cli=$1 lib=$2 prog=$3 simdir=$4
events=${EVENTS:-10000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
per_thread=$((events / 16)) # 8 threads, an allocation and a free per pair
start=$(date +%s.%N)
env LD_LIBRARY_PATH="$simdir" SIMCUDA_MEM=16G LD_PRELOAD="$lib" CUDAFRAG_TRACE=1 \
    CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT="$tmp/r" "$prog" threads "$per_thread"
end=$(date +%s.%N)
bytes=$(stat -c %s "$tmp/r.cftrace")
/usr/bin/time -f "%e %M" -o "$tmp/time" "$cli" report "$tmp/r.cftrace" >"$tmp/report.txt"
read -r secs kib <"$tmp/time"
allocs=$(sed -n 's/^allocations \([0-9]*\),.*/\1/p' "$tmp/report.txt")
echo "| events | trace bytes | bytes/event | traced run (s) | cudafrag report (s) | report max RSS (MiB) | allocations replayed |"
echo "|---|---|---|---|---|---|---|"
awk -v e="$events" -v b="$bytes" -v r="$(echo "$end - $start" | bc)" -v s="$secs" -v k="$kib" -v a="$allocs" \
    'BEGIN { printf "| %d | %d | %.2f | %.1f | %.2f | %.0f | %s |\n", e, b, b / e, r, s, k / 1024, a }'
