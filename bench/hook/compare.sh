#!/bin/sh
# Usage: compare.sh BENCH_HOOK LIB_BEFORE LIB_AFTER [LIBRARY_PATH]
# Two builds of libcudafrag.so side by side in one run: bench_hook without cudafrag,
# then with each library at CUDAFRAG_STACK_DEPTH=0 and 16, interleaved
# (base B0 A0 B16 A16 base B0 ...) so that drift of the machine hits every
# configuration alike. Per repetition overhead = (t_with - t_without) / calls; the
# table shows medians over the repetitions and the ratio after / before of the
# overheads. LIBRARY_PATH (LD_LIBRARY_PATH for every run) picks the CUDA libraries:
# the simulated device's folders, or those of a real driver and runtime.
#
# Knobs (environment): REPS (default 11), ITERS (pairs per pass, default 1000), NEST
# (frames above the loop, default 24), EVICT_KIB (default 0: KiB of a private buffer
# touched before every call, so that each call starts with cold caches as under a
# real driver; 2048 evicts L1 and L2; only the calls are timed then), TRACE (1: every
# run with cudafrag writes a trace, CUDAFRAG_TRACE=1, as the hook-cost target is
# stated), LOOPS (loop: both loops, the default; async or sync: that one only).
set -eu
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    echo "usage: $0 BENCH_HOOK LIB_BEFORE LIB_AFTER [LIBRARY_PATH]" >&2
    exit 2
fi
hook=$1 before=$2 after=$3 libpath=${4:-${LD_LIBRARY_PATH:-}}
reps=${REPS:-11} iters=${ITERS:-1000} nest=${NEST:-24} evict=${EVICT_KIB:-0}
trace=${TRACE:-0} loops=${LOOPS:-loop}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

common() {
    if [ "$trace" = 1 ]; then
        env LD_LIBRARY_PATH="$libpath" SIMCUDA_MEM=16G CUDAFRAG_STDERR=0 CUDAFRAG_JSON=0 \
            CUDAFRAG_TRACE=1 CUDAFRAG_OUTPUT="$tmp/t" "$@"
    else
        env LD_LIBRARY_PATH="$libpath" SIMCUDA_MEM=16G CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT= "$@"
    fi
}
value() { awk -v k="$1" '$1 == k { print $2 }'; }

i=0
while [ "$i" -lt "$reps" ]; do
    for cfg in base b0 a0 b16 a16; do
        case $cfg in
        base) common "$hook" "$loops" "$iters" "$nest" "$evict" ;;
        b0) common LD_PRELOAD="$before" CUDAFRAG_STACK_DEPTH=0 "$hook" "$loops" "$iters" "$nest" "$evict" ;;
        a0) common LD_PRELOAD="$after" CUDAFRAG_STACK_DEPTH=0 "$hook" "$loops" "$iters" "$nest" "$evict" ;;
        b16) common LD_PRELOAD="$before" CUDAFRAG_STACK_DEPTH=16 "$hook" "$loops" "$iters" "$nest" "$evict" ;;
        a16) common LD_PRELOAD="$after" CUDAFRAG_STACK_DEPTH=16 "$hook" "$loops" "$iters" "$nest" "$evict" ;;
        esac >"$tmp/out"
        rm -f "$tmp"/t.*
        echo "$i $cfg $(value async_ns_per_call <"$tmp/out") $(value sync_ns_per_call <"$tmp/out")" \
            >>"$tmp/loops"
    done
    i=$((i + 1))
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
raw() { awk -v c="$1" -v col="$2" '$2 == c { print $col }' "$tmp/loops" | median; }
overhead() {
    awk -v c="$1" -v col="$2" '
        $2 == "base" { base[$1] = $col }
        $2 == c { with[$1] = $col }
        END { for (r in with) printf "%.2f\n", with[r] - base[r] }' "$tmp/loops" | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

passes=50
[ "$evict" -gt 0 ] && passes=10
tr=$([ "$trace" = 1 ] && echo ", trace on" || echo "")
echo "## Before / after ($reps repetitions, fastest of $passes passes of $iters pairs, loop $nest frames deep, $evict KiB evicted before each call$tr)"
echo
echo "| loop | without cudafrag | stacks off: before | after | overhead before | after | ratio | depth 16: before | after | overhead before | after | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for loop in async:3 sync:4; do
    name=${loop%:*} col=${loop#*:}
    [ "$loops" = loop ] || [ "$loops" = "$name" ] || continue
    label=$([ "$name" = async ] && echo "cudaMallocAsync + cudaFreeAsync" || echo "cudaMalloc + cudaFree")
    ob0=$(overhead b0 "$col") oa0=$(overhead a0 "$col")
    ob16=$(overhead b16 "$col") oa16=$(overhead a16 "$col")
    echo "| $label | $(raw base "$col") | $(raw b0 "$col") | $(raw a0 "$col") | $ob0 | $oa0 |" \
        "$(ratio "$oa0" "$ob0") | $(raw b16 "$col") | $(raw a16 "$col") | $ob16 | $oa16 |" \
        "$(ratio "$oa16" "$ob16") |"
done
echo
echo "ns per call (an allocation and a free are two calls); overhead = median over"
echo "repetitions of (t_with - t_without) / calls; ratio = overhead after / overhead before."
