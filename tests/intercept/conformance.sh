#!/bin/sh
# conformance.sh PROGRAM LIBCUDAFRAG: runs conformance.c's program without
# cudafrag, with the profiler only, with the arena, with the arena serving
# stream-ordered allocations too, and with its cuMemAlloc fallback; every line (return codes, last-error state,
# out-parameters) must be identical to the run without cudafrag. The arena runs
# must really have served allocations (else the comparison proves nothing), the
# stream-ordered one more than the synchronous one.
set -eu
prog=$1 lib=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
env -u LD_PRELOAD "$prog" >"$dir/native" 2>"$dir/native.err" || {
    echo "failed without cudafrag"
    cat "$dir/native.err"
    exit 1
}
run() { # NAME ENV...: the program under cudafrag, report written to $dir/NAME.json
    name=$1
    shift
    env "$@" LD_PRELOAD="$lib" CUDAFRAG_OUTPUT="$dir/$name" "$prog" >"$dir/$name" \
        2>"$dir/$name.err" || {
        echo "$name: failed"
        cat "$dir/$name.err"
        return 1
    }
}
served() { # NAME: allocations the arena served in that run
    tr ',{}' '\n\n\n' <"$dir/$1.json" | sed -n 's/.*"allocs_served": *\([0-9]*\).*/\1/p' |
        sort -n | tail -1
}
bad=0
run profiler CUDAFRAG_ARENA=0 || bad=1
run arena CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=0 || bad=1
run arena_async CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1 || bad=1
# No address range that large: the arena falls back to cuMemAlloc chunks
# (FALLBACK_RESERVE: more than the device's virtual address space).
run arena_fallback CUDAFRAG_ARENA=1 CUDAFRAG_ARENA_ASYNC=1 \
    CUDAFRAG_ARENA_RESERVE="${FALLBACK_RESERVE:-64T}" || bad=1
[ "$bad" -eq 0 ] || exit 1
for mode in profiler arena arena_async arena_fallback; do
    if ! cmp -s "$dir/native" "$dir/$mode"; then
        echo "$mode: output differs from the run without cudafrag (< native, > $mode):"
        diff "$dir/native" "$dir/$mode" || true
        bad=1
    fi
done
sync_served=$(served arena)
async_served=$(served arena_async)
fallback_served=$(served arena_fallback)
echo "arena served $sync_served allocations, with stream-ordered ones $async_served," \
    "on cuMemAlloc chunks $fallback_served"
if [ "${sync_served:-0}" -eq 0 ] || [ "${async_served:-0}" -le "${sync_served:-0}" ] ||
    [ "${fallback_served:-0}" -ne "${async_served:-0}" ]; then
    echo "the arena did not serve the program's allocations: nothing was compared"
    bad=1
fi
[ "$bad" -eq 0 ] && cat "$dir/native"
exit "$bad"
