#!/bin/sh
# plugin.sh CUDAFRAG PYDIR: the pytest plugin in a pytest subprocess, on the
# simulated device. With --cudafrag (pytest starts again under cudafrag) a test
# over its marker's peak-live or fragmentation limit fails and one within passes;
# the summary lists the tests' peaks and the report has a region per test.
# Without --cudafrag the limits are not checked and the summary says so. A
# framework's cache (a stand-in torch) is emptied before each test, so a test is
# not charged with what an earlier one left cached, unless --cudafrag-keep-cache.
set -u
cli=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") pydir=$2
here=$(dirname "$0")
. "$here/../lib.sh"
scratch
py=""
for c in python3 /usr/bin/python3; do
    "$c" -c "import pytest" 2>/dev/null && { py=$(command -v "$c"); break; }
done
[ -n "$py" ] || { echo "no python3 with pytest: skipped" >&2; exit 77; }
on_fail() { cat "$dir/out.txt"; ls "$dir"; sed -n "/-- regions/,/^\$/p" "$dir/r.txt"; }
cp "$here/limits_suite.py" "$dir/test_limits.py"
export PYTHONPATH="$pydir" PATH="$(dirname "$cli"):$PATH"
run_pytest() {
    (cd "$dir" && CUDAFRAG_OUTPUT="$dir/r" "$py" -m pytest -p cudafrag.pytest_plugin \
        -p no:cacheprovider -rA "$@" test_limits.py) >"$dir/out.txt" 2>&1
}

t_case=profiled
run_pytest --cudafrag --cudafrag-sim
[ $? -eq 1 ] || fail "pytest did not exit 1 (tests failed)"
for t in test_under_limit test_compact test_unmarked; do
    grep -q "^PASSED test_limits.py::$t\$" "$dir/out.txt" || fail "$t did not pass"
done
for t in test_over_limit test_fragmented; do
    grep -q "^FAILED test_limits.py::$t\$" "$dir/out.txt" || fail "$t did not fail"
done
grep -q "cudafrag: peak live 100.0 MiB is above the limit 64.0 MiB" "$dir/out.txt" ||
    fail "the failure does not say the peak and the limit"
grep -q "cudafrag: fragmentation (1 - peak live / peak footprint) 25.0% is above the limit 20.0%" \
    "$dir/out.txt" || fail "the fragmentation failure is not said"
grep -qE "^ *200.0 MiB live +200.0 MiB footprint +test_limits.py::test_unmarked\$" "$dir/out.txt" ||
    fail "the summary does not list the tests' peaks"
grep -qE "^ +0 +1 +100 MiB +100 MiB +test_limits.py::test_over_limit\$" "$dir/r.txt" ||
    fail "the report has no region for the test"

t_case=framework-cache
cp "$here/cache_suite.py" "$dir/test_cache.py"
cp "$here/fake_torch.py" "$dir/torch.py"
run_cache() {
    (cd "$dir" && CUDAFRAG_OUTPUT="$dir/c" "$py" -m pytest -p cudafrag.pytest_plugin \
        -p no:cacheprovider -rA --cudafrag --cudafrag-sim "$@" test_cache.py) >"$dir/out.txt" 2>&1
}
run_cache || fail "the cache of an earlier test was charged to the next"
grep -q "^PASSED test_cache.py::test_after_cache\$" "$dir/out.txt" || fail "test_after_cache did not pass"
run_cache --cudafrag-keep-cache
[ $? -eq 1 ] || fail "with --cudafrag-keep-cache the cached blocks were not charged"
grep -q "cudafrag: peak live 132.0 MiB is above the limit 64.0 MiB" "$dir/out.txt" ||
    fail "with --cudafrag-keep-cache the failure does not say 132 MiB"
rm -f "$dir/test_cache.py" "$dir/torch.py"

t_case=bare
run_pytest || fail "without --cudafrag the suite did not pass"
grep -q "cudafrag: the limits of 4 test(s) were not checked: run pytest with --cudafrag" \
    "$dir/out.txt" || fail "the unchecked limits are not said"
echo "ok: over a limit fails, within passes; a framework's cache is emptied between tests; unprofiled, the limits are said to be unchecked"
