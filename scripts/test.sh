#!/bin/sh
# The whole test suite: install what is missing, build, run every test, then the
# suite under AddressSanitizer + UndefinedBehaviorSanitizer in a second build
# folder (less the tests that repeat code it already runs: suite 'plain-only'),
# the record, arena and trace suites (less the same) under ThreadSanitizer in a
# third, then a short libFuzzer run of every fuzz target (scripts/fuzz.sh, one
# test each).
# Ends with "N passed, N failed".
#
# Two cores, one after the other, would leave them idle while tests wait on
# their programs: the sanitizer and fuzz builds run in the background at the
# lowest priority while the plain tests run, so they take the time the tests
# leave, and each build is waited for only when its tests start.
# CF_SKIP_SANITIZERS=1, CF_SKIP_TSAN=1, CF_SKIP_FUZZ=1 leave parts out;
# CF_TEST_JOBS is how many tests run at a time (default twice the cores);
# CF_FUZZ_SECONDS is each fuzz target's time (default 10; scripts/fuzz.sh alone
# runs 30 and more).
set -eu
cd "$(dirname "$0")/.."
. scripts/setup.sh
# shellcheck disable=SC2086
cf_install_missing $CF_TEST_PACKAGES
fuzz=1
[ "${CF_SKIP_FUZZ:-0}" != 1 ] || fuzz=0
if [ $fuzz = 1 ]; then
    # shellcheck disable=SC2086
    cf_install_missing $CF_FUZZ_PACKAGES || { echo "== could not install $CF_FUZZ_PACKAGES: no fuzzing"; fuzz=0; }
fi
asan=1 tsan=1
[ "${CF_SKIP_SANITIZERS:-0}" != 1 ] || asan=0 tsan=0
[ "${CF_SKIP_TSAN:-0}" != 1 ] || tsan=0

t0=$(date +%s)
passed=0
failed=0
# Tests the sanitizer pass leaves out: the source checks and the wheel (they do
# not depend on the build's flags), the scale test (its CPU-time limits are the
# plain build's), and 'plain-only', each a repeat of code the pass runs anyway
# (tests/meson.build names them).
asan_skip="--no-suite layout --no-suite format --no-suite wheel --no-suite scale --no-suite plain-only"
# The TSan pass: what threads touch, less the same repeats and the replays of
# arena traces (one thread in the command).
tsan_suites="--suite record --suite arena --suite trace --no-suite plain-only --no-suite replay"

# build DIR TARGET-SELECTION MESON-ARGS...: configure DIR and build what the
# tests selected by TARGET-SELECTION (suite-targets.py's arguments) need, at the
# lowest priority.
build() {
    dir=$1 selection=$2
    shift 2
    [ -f "$dir/build.ninja" ] || nice -n 19 meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 ||
        { cat "$dir.setup.log"; return 1; }
    # shellcheck disable=SC2086
    targets=$(python3 scripts/suite-targets.py "$dir" $selection) || return 1
    # shellcheck disable=SC2086
    nice -n 19 ninja -C "$dir" $targets >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log"; return 1; }
}

# background_builds: the sanitizer and fuzz builds, one after another; each
# leaves DIR.built (or DIR.build-failed) when done.
background_builds() {
    if [ $asan = 1 ]; then
        if build build-asan "$asan_skip" -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false \
            -Dbuildtype=debug -Dbench=false; then touch build-asan.built; else touch build-asan.build-failed; fi
    fi
    if [ $tsan = 1 ]; then
        # shellcheck disable=SC2086
        if build build-tsan "record arena trace --no-suite plain-only --no-suite replay" -Dwerror=true \
            -Db_sanitize=thread -Db_lundef=false -Dbench=false; then
            touch build-tsan.built
        else
            touch build-tsan.build-failed
        fi
    fi
    if [ $fuzz = 1 ]; then
        rc=0
        CF_FUZZ_BUILD_ONLY=1 nice -n 19 ./scripts/fuzz.sh >build-fuzz.run.log 2>&1 || rc=$?
        echo $rc >build-fuzz.built
    fi
}

# wait_built DIR NAME: wait for the background build of DIR; 0 when it built.
wait_built() {
    while [ ! -e "$1.built" ] && [ ! -e "$1.build-failed" ]; do sleep 1; done
    [ -e "$1.built" ] && return 0
    echo "== $2: BUILD FAILED"
    failed=$((failed + 1))
    return 1
}

# Tests at a time: twice the cores. Many tests wait on the programs they start
# (a report written at exit, a browser, a child's signal); with two at a time on
# two cores the plain tests took 354 s (2026-12-04), with four and the background
# builds beside them 182 s, the cores busy throughout (docs/performance.md).
jobs=${CF_TEST_JOBS:-$((2 * $(nproc 2>/dev/null || echo 1)))}

# run_tests NAME DIR MESON-TEST-ARGS...: one build folder's tests, counted.
run_tests() {
    name=$1 dir=$2
    shift 2
    start=$(date +%s)
    echo "== $name: testing"
    ${CF_TEST_WRAP:-} meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "$jobs" \
        --timeout-multiplier "${CF_TIMEOUT_MULT:-1}" "$@" >"$dir.test.log" 2>&1 || true
    grep -E '^ *[0-9]+/[0-9]+ ' "$dir.test.log" | grep -vE ' (OK|SKIP) ' || true
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -n 1)
    bad=0
    for k in Fail "Unexpected Pass" Timeout; do
        n=$(sed -n "s/^$k: *\([0-9]*\).*/\1/p" "$dir.test.log" | tail -n 1)
        bad=$((bad + ${n:-0}))
    done
    [ -n "$ok" ] || { echo "== $name: no test summary (see $dir.test.log)"; bad=$((bad + 1)); ok=0; }
    echo "== $name: $ok passed, $bad failed ($(($(date +%s) - start)) s; $(($(date +%s) - t0)) s in all)"
    passed=$((passed + ok))
    failed=$((failed + bad))
}

rm -f build-asan.built build-asan.build-failed build-tsan.built build-tsan.build-failed build-fuzz.built
echo "== tests: building build"
if cf_configure build -Dwerror=true && cf_ninja build; then
    if [ $asan = 1 ] || [ $tsan = 1 ] || [ $fuzz = 1 ]; then
        echo "== building the sanitizer and fuzz folders in the background (logs: build-*.build.log)"
        background_builds </dev/null >build-background.log 2>&1 &
        bg=$!
    fi
    run_tests tests build
else
    echo "== tests: BUILD FAILED"
    failed=$((failed + 1))
    asan=0 tsan=0 fuzz=0
fi

if [ $asan = 1 ] && wait_built build-asan "tests under ASan+UBSan"; then
    # shellcheck disable=SC2086
    CF_TIMEOUT_MULT=3 run_tests "tests under ASan+UBSan" build-asan $asan_skip
fi
if [ $tsan = 1 ] && wait_built build-tsan "record, arena and trace suites under TSan"; then
    # gcc 12's TSan runtime crashes at random on kernels with large mmap
    # randomization: run without it where the kernel lets us.
    wrap=""
    setarch -R true 2>/dev/null && wrap="setarch -R"
    # shellcheck disable=SC2086
    CF_TEST_WRAP=$wrap CF_TIMEOUT_MULT=3 run_tests "record, arena and trace suites under TSan" build-tsan \
        $tsan_suites
fi
if [ $fuzz = 1 ]; then
    while [ ! -e build-fuzz.built ]; do sleep 1; done
    rc=$(cat build-fuzz.built)
    secs=${CF_FUZZ_SECONDS:-10}
    echo "== fuzzing: $secs s per target"
    start=$(date +%s)
    [ "$rc" -ne 0 ] || ./scripts/fuzz.sh "$secs" >build-fuzz.run.log 2>&1 || rc=$?
    if [ "$rc" -eq 77 ]; then
        tail -n 1 build-fuzz.run.log
    else
        grep -v '^ *#' build-fuzz.run.log | grep -E '^==|ERROR|SUMMARY|runtime error' | tail -n 40 || true
        ok=$(grep -c ': .* runs in .*, no failure$' build-fuzz.run.log || true)
        bad=$(grep -c ': FAILED$' build-fuzz.run.log || true)
        [ "$rc" -eq 0 ] || [ "$bad" -gt 0 ] || bad=1
        echo "== fuzzing: $ok passed, $bad failed ($(($(date +%s) - start)) s; $(($(date +%s) - t0)) s in all)"
        passed=$((passed + ok))
        failed=$((failed + bad))
    fi
fi
[ -z "${bg:-}" ] || wait "$bg" || true
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
