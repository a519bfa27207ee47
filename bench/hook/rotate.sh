#!/usr/bin/env bash
# Usage: rotate.sh BENCH_HOOK LOOP CONFIG...
# Any number of configurations of one bench_hook loop (LOOP: async or sync), run in
# a rotation whose order is shuffled every repetition, so that neither drift of the
# machine nor "which run came right before" favours one of them. A CONFIG is
# NAME=ASSIGNMENTS, the environment of that run as space-separated VAR=VALUE words
# (e.g. 'd0=LD_PRELOAD=/x/libcudafrag.so CUDAFRAG_STACK_DEPTH=0'); the first
# CONFIG is the reference (normally the program without cudafrag: 'native=').
# Per repetition, overhead = ns per call of the configuration - ns per call of the
# reference in the same repetition; the table gives the median over repetitions and
# the quartiles, which show how noisy the machine was; the last column compares the
# fastest run of each configuration (the cost of the calls alone when the machine's
# noise is one-sided, as on a shared host).
#
# Knobs (environment): REPS (default 21), ITERS (pairs per pass, default 1000), NEST
# (frames above the loop, default 24), SEED (of the shuffle, default 1), TASKSET
# (a CPU list: every run is pinned there), EVICT_KIB (bench_hook sweeps that much
# memory before each call, as a real driver's path evicts the caches; unset: none). Every run gets CUDAFRAG_STDERR=0 and a
# scratch CUDAFRAG_OUTPUT; its trace, if the configuration asks for one, is removed
# after the run.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 BENCH_HOOK async|sync NAME=ASSIGNMENTS..." >&2
    exit 2
fi
hook=$1 loop=$2
shift 2
case $loop in async | sync) ;; *) echo "rotate.sh: LOOP is async or sync" >&2; exit 2 ;; esac
reps=${REPS:-21} iters=${ITERS:-1000} nest=${NEST:-24} seed=${SEED:-1}
names=() envs=()
for c in "$@"; do
    names+=("${c%%=*}")
    envs+=("${c#*=}")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pin=()
[ -n "${TASKSET:-}" ] && pin=(taskset -c "$TASKSET")

RANDOM=$seed
for ((r = 0; r < reps; r++)); do
    order=$(for i in "${!names[@]}"; do echo "$RANDOM $i"; done | sort -n | cut -d' ' -f2)
    for i in $order; do
        # shellcheck disable=SC2086 # the assignments are words on purpose
        out=$(env CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT="$tmp/t" ${envs[$i]} "${pin[@]}" \
            "$hook" "$loop" "$iters" "$nest" ${EVICT_KIB:+"$EVICT_KIB"})
        rm -f "$tmp"/t.*
        ns=$(echo "$out" | awk -v k="${loop}_ns_per_call" '$1 == k { print $2 }')
        echo "$r $i $ns" >>"$tmp/rows"
    done
done

echo "| configuration | ns per call: median | fastest | over ${names[0]}: median | quartiles | fastest - fastest |"
echo "|---|---|---|---|---|---|"
# q FRACTION: that quantile of the numbers on stdin (linear between ranks).
q() { sort -g | awk -v f="$1" '{ v[NR] = $1 } END { k = f * (NR - 1) + 1; i = int(k); printf "%.1f", v[i] + (k - i) * (v[i + 1] - v[i]) }'; }
for i in "${!names[@]}"; do
    awk -v c="$i" '$2 == c { print $3 }' "$tmp/rows" >"$tmp/raw"
    awk -v c="$i" '$2 == 0 { ref[$1] = $3 } $2 == c { v[$1] = $3 }
        END { for (r in v) print v[r] - ref[r] }' "$tmp/rows" >"$tmp/over"
    [ "$i" = 0 ] && ref_min=$(q 0 <"$tmp/raw")
    printf '| %s | %s | %s | %+.1f | %+.1f .. %+.1f | %+.1f |\n' "${names[$i]}" "$(q 0.5 <"$tmp/raw")" \
        "$(q 0 <"$tmp/raw")" "$(q 0.5 <"$tmp/over")" "$(q 0.25 <"$tmp/over")" "$(q 0.75 <"$tmp/over")" \
        "$(awk -v a="$(q 0 <"$tmp/raw")" -v b="$ref_min" 'BEGIN { print a - b }')"
done
echo
echo "$reps repetitions, $loop loop, fastest of 50 passes of $iters pairs, $nest frames deep;"
echo "ns per call (an allocation and a free are two calls)."
