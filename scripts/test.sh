#!/bin/sh
# The whole test suite: install what is missing, build, run every test, then the
# same suite under AddressSanitizer + UndefinedBehaviorSanitizer in a second
# build folder. Ends with "N passed, N failed".
set -eu
cd "$(dirname "$0")/.."
. scripts/setup.sh
# shellcheck disable=SC2086
cf_install_missing $CF_TEST_PACKAGES

passed=0
failed=0
run_suite() { # name build-dir meson-args...
    name=$1 dir=$2
    shift 2
    echo "== $name: building $dir"
    if ! cf_build "$dir" "$@"; then
        echo "== $name: BUILD FAILED"
        failed=$((failed + 1))
        return 0
    fi
    echo "== $name: testing"
    meson test -C "$dir" --print-errorlogs --num-processes 2 --timeout-multiplier "${CF_TIMEOUT_MULT:-1}" \
        >"$dir.test.log" 2>&1 || true
    grep -E '^ *[0-9]+/[0-9]+ ' "$dir.test.log" | grep -vE ' (OK|SKIP) ' || true
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -n 1)
    bad=0
    for k in Fail "Unexpected Pass" Timeout; do
        n=$(sed -n "s/^$k: *\([0-9]*\).*/\1/p" "$dir.test.log" | tail -n 1)
        bad=$((bad + ${n:-0}))
    done
    [ -n "$ok" ] || { echo "== $name: no test summary (see $dir.test.log)"; bad=$((bad + 1)); ok=0; }
    echo "== $name: $ok passed, $bad failed"
    passed=$((passed + ok))
    failed=$((failed + bad))
}

run_suite "tests" build -Dwerror=true
if [ "${CF_SKIP_SANITIZERS:-0}" != 1 ]; then
    CF_TIMEOUT_MULT=3 run_suite "tests under ASan+UBSan" build-asan -Dwerror=true \
        -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Dbench=false
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
