#!/bin/sh
# queries.sh PROGRAM LIBCUDAFRAG: the driver queries the simulated driver answered
# during steady allocation loops (queries.c), without cudafrag, with it, and with its
# arena serving. With cudafrag every count must equal the run without it; with the
# arena none may exceed it (the arena serves calls the runtime would have queried
# for). The pool reads cudafrag documents are the exception: a loop of same-size
# stream-ordered pairs on one stream may add one per 16 allocations (the others
# skip it: docs/recording.md), one after the synchronization that ends the warm-up,
# one at the loop's own closing synchronization, and one for the rounding; the
# read at every allocation of before would be 1000. CUDAFRAG_SAMPLE_MS keeps the record
# layer's timed samples out of the loops; the caller sets SIMCUDA_COUNT_CALLS=1.
set -eu
prog=$1 lib=$2
. "$(dirname "$0")/../lib.sh"
scratch
rc=0
pairs=1000
env -u LD_PRELOAD "$prog" "$pairs" >"$dir/base" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc" # 77: not the simulated driver
LD_PRELOAD="$lib" "$prog" "$pairs" >"$dir/native"
LD_PRELOAD="$lib" CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1 "$prog" "$pairs" >"$dir/arena"
check() { # MODE RELATION: compare each line of the run MODE with the run without
    paste "$dir/base" "$dir/$1" | awk -v mode="$1" -v rel="$2" -v pairs="$pairs" '
        $1 != $4 || $2 != $5 { print "mismatched lines: " $0; bad = 1; next }
        $2 == "cuMemPoolGetAttribute" {
            if ($6 > $3 + int(pairs / 16) + 3) {
                printf "%s: %s made %d pool reads, %d without cudafrag\n", mode, $1, $6, $3
                bad = 1
            }
            next
        }
        (rel == "eq" && $6 != $3) || (rel == "le" && $6 > $3) {
            printf "%s: %s made %d %s calls, %d without cudafrag\n", mode, $1, $6, $2, $3
            bad = 1
        }
        END { exit bad }'
}
ok=0
check native eq || ok=1
check arena le || ok=1
if [ "$ok" -ne 0 ]; then
    echo "--- without cudafrag / with / with the arena:"
    paste "$dir/base" "$dir/native" "$dir/arena" | awk '{ print $1, $2, $3, $6, $9 }'
fi
exit "$ok"
