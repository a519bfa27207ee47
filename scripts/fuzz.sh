#!/bin/sh
# Fuzz the inputs cudafrag reads (trace files, CUDAFRAG_* values, PyTorch
# snapshot pickles) with libFuzzer: builds build-fuzz with clang, ASan and UBSan,
# then runs every target of tests/fuzz for SECONDS (default 30), starting from
# its committed corpus (tests/fuzz/corpus/TARGET, never modified here: new inputs
# go to build-fuzz/corpus/TARGET). Exits 77 when clang or libFuzzer is missing, 1
# when a target crashed, leaked or timed out (the input is kept and re-run with
# its output shown). Targets run CF_FUZZ_JOBS at a time (default: one a core).
# CF_FUZZ_BUILD_ONLY=1 builds the targets and stops (the test suite builds them
# while other tests run).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -eu
cd "$(dirname "$0")/.."
secs=${1:-30}
[ $# -gt 0 ] && shift
targets=${*:-fuzz_trace_decode fuzz_trace_report fuzz_trace_whatif fuzz_import fuzz_config}

command -v clang >/dev/null 2>&1 || { echo "clang not installed: fuzzing skipped"; exit 77; }
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe/p.c"
clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2>/dev/null ||
    { echo "clang has no libFuzzer runtime (Debian: libclang-rt-dev): fuzzing skipped"; exit 77; }

dir=build-fuzz
if [ ! -f "$dir/build.ninja" ]; then
    # clang's -Wstring-concatenation takes the long strings of a table in findings.c
    # for a missing comma; every other warning is an error here too.
    CC=clang meson setup "$dir" -Dfuzz=true -Dtests=false -Dbench=false -Dwerror=true \
        -Dc_args=-Wno-string-concatenation -Db_sanitize=address,undefined -Db_lundef=false \
        >"$dir.setup.log" 2>&1 ||
        { cat "$dir.setup.log"; exit 1; }
fi
paths=""
for t in $targets; do paths="$paths tests/fuzz/$t"; done
# shellcheck disable=SC2086
ninja -C "$dir" $paths >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log"; exit 1; }
[ "${CF_FUZZ_BUILD_ONLY:-0}" != 1 ] || exit 0

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# fuzz_one TARGET: one target's run; prints its one result line (and, on a
# failure, what it found) and exits 1 when it failed.
fuzz_one() {
    t=$1
    work=$dir/corpus/$t
    art=$dir/artifacts/$t
    mkdir -p "$work" "$art"
    log=$dir/$t.log
    # The committed corpus is read; what the run finds goes to work/.
    if ! "$dir/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
        -artifact_prefix="$art/" -print_final_stats=1 "$work" "tests/fuzz/corpus/$t" \
        >"$log" 2>&1; then
        echo "== $t: FAILED"
        grep -E "^==[0-9]+==ERROR|^SUMMARY|runtime error|Test unit written" "$log" | head -10
        for crash in "$art"/*; do
            [ -f "$crash" ] || continue
            echo "== re-run of $crash:"
            CF_FUZZ_VERBOSE=1 "$dir/tests/fuzz/$t" "$crash" 2>&1 | tail -40
        done
        return 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    echo "== $t: ${runs:-?} runs in ${secs} s, no failure"
}

# Each fuzzer uses one core, and every target runs as long: deal the targets
# out to CF_FUZZ_JOBS lanes (default: one a core) that run side by side, each
# target's output kept apart and printed whole at the end.
jobs=${CF_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
lane=0
pids=""
while [ "$lane" -lt "$jobs" ]; do
    i=0
    mine=""
    for t in $targets; do
        [ $((i % jobs)) -eq "$lane" ] && mine="$mine $t"
        i=$((i + 1))
    done
    (
        bad=0
        for t in $mine; do fuzz_one "$t" >"$dir/$t.result" 2>&1 || bad=$((bad + 1)); done
        exit "$bad"
    ) &
    pids="$pids $!"
    lane=$((lane + 1))
done
failed=0
for pid in $pids; do wait "$pid" || failed=$((failed + 1)); done
for t in $targets; do cat "$dir/$t.result"; done
[ "$failed" -eq 0 ]
