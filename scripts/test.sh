#!/bin/sh
# The whole test suite: install what is missing, build, run every test, then the
# same suite under AddressSanitizer + UndefinedBehaviorSanitizer in a second
# build folder, and the record, arena and trace suites under ThreadSanitizer in a
# third, then a short libFuzzer run of every fuzz target (scripts/fuzz.sh, one test
# each). Ends with "N passed, N failed".
set -eu
cd "$(dirname "$0")/.."
. scripts/setup.sh
# shellcheck disable=SC2086
cf_install_missing $CF_TEST_PACKAGES
if [ "${CF_SKIP_FUZZ:-0}" != 1 ]; then
    # shellcheck disable=SC2086
    cf_install_missing $CF_FUZZ_PACKAGES || echo "== could not install $CF_FUZZ_PACKAGES: no fuzzing"
fi

passed=0
failed=0
# suite_targets DIR: the build outputs that the suites named in CF_ONLY_SUITES
# need; nothing (build all) without it.
suite_targets() {
    [ -n "${CF_ONLY_SUITES:-}" ] || return 0
    # shellcheck disable=SC2086
    python3 scripts/suite-targets.py "$1" $CF_ONLY_SUITES
}
run_suite() { # name build-dir meson-args...
    name=$1 dir=$2
    shift 2
    start=$(date +%s)
    echo "== $name: building $dir"
    # With CF_ONLY_SUITES, only what those suites' tests use is built.
    if ! cf_configure "$dir" "$@" || ! cf_ninja "$dir" $(suite_targets "$dir"); then
        echo "== $name: BUILD FAILED"
        failed=$((failed + 1))
        return 0
    fi
    echo "== $name: testing"
    # shellcheck disable=SC2086
    ${CF_TEST_WRAP:-} meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 \
        --timeout-multiplier "${CF_TIMEOUT_MULT:-1}" ${CF_TEST_SUITES:-} >"$dir.test.log" 2>&1 || true
    grep -E '^ *[0-9]+/[0-9]+ ' "$dir.test.log" | grep -vE ' (OK|SKIP) ' || true
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -n 1)
    bad=0
    for k in Fail "Unexpected Pass" Timeout; do
        n=$(sed -n "s/^$k: *\([0-9]*\).*/\1/p" "$dir.test.log" | tail -n 1)
        bad=$((bad + ${n:-0}))
    done
    [ -n "$ok" ] || { echo "== $name: no test summary (see $dir.test.log)"; bad=$((bad + 1)); ok=0; }
    echo "== $name: $ok passed, $bad failed ($(($(date +%s) - start)) s with the build)"
    passed=$((passed + ok))
    failed=$((failed + bad))
}

run_suite "tests" build -Dwerror=true
if [ "${CF_SKIP_SANITIZERS:-0}" != 1 ]; then
    # Once is enough for what does not depend on the build's flags: the layout and
    # format checks read the sources, the wheel test builds a wheel of its own;
    # the scale test's CPU-time limits are for the plain build.
    CF_TIMEOUT_MULT=3 \
        CF_TEST_SUITES="--no-suite layout --no-suite format --no-suite wheel --no-suite scale" \
        run_suite "tests under ASan+UBSan" build-asan -Dwerror=true \
        -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Dbench=false
fi
if [ "${CF_SKIP_SANITIZERS:-0}" != 1 ] && [ "${CF_SKIP_TSAN:-0}" != 1 ]; then
    # gcc 12's TSan runtime crashes at random on kernels with large mmap
    # randomization: run without it where the kernel lets us.
    wrap=""
    setarch -R true 2>/dev/null && wrap="setarch -R"
    CF_TEST_WRAP=$wrap CF_TIMEOUT_MULT=3 CF_ONLY_SUITES="record arena trace" \
        CF_TEST_SUITES="--suite record --suite arena --suite trace" \
        run_suite "record, arena and trace suites under TSan" build-tsan -Dwerror=true \
        -Db_sanitize=thread -Db_lundef=false -Dbench=false
fi
if [ "${CF_SKIP_FUZZ:-0}" != 1 ]; then
    # Each target is one test; CF_FUZZ_SECONDS per target.
    echo "== fuzzing: ${CF_FUZZ_SECONDS:-30} s per target"
    start=$(date +%s)
    rc=0
    ./scripts/fuzz.sh "${CF_FUZZ_SECONDS:-30}" >build-fuzz.run.log 2>&1 || rc=$?
    if [ $rc -eq 77 ]; then
        tail -n 1 build-fuzz.run.log
    else
        grep -v '^ *#' build-fuzz.run.log | grep -E '^==|ERROR|SUMMARY|runtime error' | tail -n 40 || true
        ok=$(grep -c ': .* runs in .*, no failure$' build-fuzz.run.log || true)
        bad=$(grep -c ': FAILED$' build-fuzz.run.log || true)
        [ $rc -eq 0 ] || [ "$bad" -gt 0 ] || bad=1
        echo "== fuzzing: $ok passed, $bad failed ($(($(date +%s) - start)) s with the build)"
        passed=$((passed + ok))
        failed=$((failed + bad))
    fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
