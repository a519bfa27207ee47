#!/bin/sh
# Usage: run.sh BENCH_HOOK BENCH_META LIBCUDAFRAG SIM_DIR
# Interception overhead per call: bench_hook runs without cudafrag, preloaded with
# CUDAFRAG_STACK_DEPTH=0 (also once more with the shadow arena model off) and with
# CUDAFRAG_STACK_DEPTH=16, interleaved (A B C D A B C D ...) so that drift of the
# machine hits all configurations alike; each repetition gives
# overhead = (t_with - t_without) / calls, and the table shows the median over the
# repetitions. Then the bookkeeping memory: exact, from cudafrag's own allocator
# (bench_meta), and as VmRSS growth with live allocations under the preloaded library.
#
# Each run reports the fastest of 50 short passes per loop (see bench_hook.c), so
# that other processes on the machine do not count as overhead.
#
# Knobs (environment): REPS (default 11), ITERS (allocation/free pairs per pass,
# default 1000), NEST (frames above the loop, default 24), LIVE (live allocations
# for the memory runs, default 100000), EVICT_KIB (default 0: KiB of a private buffer
# touched before every call, see bench_hook.c).
set -eu
if [ $# -ne 4 ]; then
    echo "usage: $0 BENCH_HOOK BENCH_META LIBCUDAFRAG SIM_DIR" >&2
    exit 2
fi
hook=$1 meta=$2 lib=$3 simdir=$4
reps=${REPS:-11} iters=${ITERS:-1000} nest=${NEST:-24} live=${LIVE:-100000}
evict=${EVICT_KIB:-0}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# No report files and nothing on stderr: the report is written after the timed loops
# anyway, but it must not pollute the output parsed here.
common() {
    env LD_LIBRARY_PATH="$simdir" SIMCUDA_MEM=16G CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT= "$@"
}
run_base() { common "$hook" "$@"; }
run_depth() {
    depth=$1 shadow=$2
    shift 2
    common LD_PRELOAD="$lib" CUDAFRAG_STACK_DEPTH="$depth" CUDAFRAG_SHADOW="$shadow" "$hook" "$@"
}
value() { awk -v k="$1" '$1 == k { print $2 }'; }

# One line per repetition and configuration: "config async_ns sync_ns".
i=0
while [ "$i" -lt "$reps" ]; do
    for cfg in base d0 d0ns d16; do
        case $cfg in
        base) run_base loop "$iters" "$nest" "$evict" >"$tmp/out" ;;
        d0) run_depth 0 1 loop "$iters" "$nest" "$evict" >"$tmp/out" ;;
        d0ns) run_depth 0 0 loop "$iters" "$nest" "$evict" >"$tmp/out" ;;
        d16) run_depth 16 1 loop "$iters" "$nest" "$evict" >"$tmp/out" ;;
        esac
        echo "$i $cfg $(value async_ns_per_call <"$tmp/out") $(value sync_ns_per_call <"$tmp/out")" \
            >>"$tmp/loops"
    done
    i=$((i + 1))
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# Column 3 (async) or 4 (sync) of a configuration, raw or minus the same
# repetition's run without cudafrag.
raw() { awk -v c="$1" -v col="$2" '$2 == c { print $col }' "$tmp/loops" | median; }
overhead() {
    awk -v c="$1" -v col="$2" '
        $2 == "base" { base[$1] = $col }
        $2 == c { with[$1] = $col }
        END { for (r in with) printf "%.2f\n", with[r] - base[r] }' "$tmp/loops" | median
}

passes=50
[ "$evict" -gt 0 ] && passes=10
echo "## Interception overhead ($reps repetitions, fastest of $passes passes of $iters pairs, loop $nest frames deep, $evict KiB evicted before each call)"
echo
echo "| loop | without cudafrag | stacks off | overhead | stacks and shadow off | overhead | depth 16 | overhead |"
echo "|---|---|---|---|---|---|---|---|"
for loop in async:3 sync:4; do
    name=${loop%:*} col=${loop#*:}
    label=$([ "$name" = async ] && echo "cudaMallocAsync + cudaFreeAsync" || echo "cudaMalloc + cudaFree")
    echo "| $label | $(raw base "$col") | $(raw d0 "$col") | $(overhead d0 "$col") |" \
        "$(raw d0ns "$col") | $(overhead d0ns "$col") | $(raw d16 "$col") | $(overhead d16 "$col") |"
done
echo
echo "All values in ns per call (an allocation and a free are two calls). Overhead = median over"
echo "repetitions of (t_with - t_without) / calls. Shadow off: CUDAFRAG_SHADOW=0."

echo
echo "## Bookkeeping memory"
echo
echo "From cudafrag's allocator counters (bench_meta, stack depth 16):"
echo
common CUDAFRAG_STACK_DEPTH=16 "$meta" "$live" | sed 's/^/    /'

# VmRSS growth with LIVE live allocations; the difference to the run without
# cudafrag is cudafrag's share (the simulated device has host bookkeeping too).
for rep in 1 2 3; do
    for cfg in base d16 d16ns; do
        case $cfg in
        base) run_base live "$live" ;;
        d16) run_depth 16 1 live "$live" ;;
        d16ns) run_depth 16 0 live "$live" ;;
        esac | value live_rss_kib | sed "s/^/$cfg /" >>"$tmp/rss"
    done
done
rss() { awk -v c="$1" '$1 == c { print $2 }' "$tmp/rss" | median; }
per_alloc() { awk -v a="$(rss "$1")" -v b="$(rss base)" -v n="$live" 'BEGIN { printf "%.1f", (a - b) * 1024 / n }'; }
echo
echo "VmRSS growth while $live cudaMalloc allocations are live (median of 3 runs each):"
echo
echo "| run | VmRSS growth (KiB) | cudafrag's bytes per live allocation |"
echo "|---|---|---|"
echo "| without cudafrag | $(rss base) | - |"
echo "| cudafrag, depth 16 | $(rss d16) | $(per_alloc d16) |"
echo "| cudafrag, depth 16, shadow off | $(rss d16ns) | $(per_alloc d16ns) |"
