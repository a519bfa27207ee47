#!/bin/sh
# wheel.sh SOURCE_ROOT: builds the wheel (meson-python, no network), installs it
# into a fresh venv and runs from there: `cudafrag run --sim` and `python -m
# cudafrag run --sim` of the bundled demo, both with a real report; the command
# needs none of libdw, libelf, libzstd and the preload library only libc; the
# pytest plugin is found through its entry point. Skipped (77) where
# python3-mesonpy or python3-build is not installed.
set -u
src=$1
here=$(dirname "$0")
. "$here/../lib.sh"
scratch
py=""
for c in python3 /usr/bin/python3; do
    "$c" -c "import mesonpy, build, venv" 2>/dev/null && { py=$(command -v "$c"); break; }
done
[ -n "$py" ] || { echo "meson-python or build is not installed: skipped" >&2; exit 77; }
on_fail() { tail -30 "$dir/log.txt" 2>/dev/null; }
# Nothing of the build tree on the way: all must come from the wheel.
unset LD_LIBRARY_PATH PYTHONPATH

t_case=build
# meson-python picks its own build folder: given one, version 0.12 asks meson to
# --reconfigure it, which meson 1.0 refuses for an empty folder.
# Unoptimised: what is checked here is the package (its layout, its libraries, that
# it installs and runs), not the code's speed, and -O0 halves the test's compile
# time, the longest part of the suite on two cores. A release wheel is built as
# docs/python.md says.
"$py" -m build --wheel --no-isolation -Csetup-args=-Doptimization=0 --outdir "$dir/dist" "$src" \
    >"$dir/log.txt" 2>&1 || fail "the wheel did not build"
whl=$(ls "$dir"/dist/cudafrag-*.whl) || fail "no wheel"
case $whl in *-linux_*.whl) ;; *) fail "the wheel is not tagged for the platform: $whl" ;; esac

t_case=install
# The system's packages are visible (pytest); the wheel goes into the venv.
"$py" -m venv --system-site-packages "$dir/venv" >"$dir/log.txt" 2>&1 || fail "no venv"
"$dir/venv/bin/python" -m pip install --no-index --no-deps "$whl" >"$dir/log.txt" 2>&1 ||
    fail "pip install of the wheel failed"
pkg=$("$dir/venv/bin/python" -c 'import cudafrag, os; print(os.path.dirname(cudafrag.__file__))')
case $pkg in "$dir/venv/"*) ;; *) fail "cudafrag is imported from $pkg, not the venv" ;; esac

t_case=ldd
ldd "$pkg/bin/cudafrag" >"$dir/log.txt" 2>&1 || fail "ldd of the command failed"
! grep -qE "libdw|libelf|libzstd|not found" "$dir/log.txt" || fail "the command needs shared libraries"
ldd "$pkg/lib/libcudafrag.so" >"$dir/log.txt" 2>&1 || fail "ldd of the library failed"
! grep -vE "linux-vdso|ld-linux|libc\.so|libdl\.so|libpthread\.so" "$dir/log.txt" | grep -q . ||
    fail "the preload library needs more than libc"

# report_ok NAME: $dir/NAME.json is the demo's report (4 weights and 12
# activations a step, STEPS steps), with its regions.
report_ok() {
    "$dir/venv/bin/python" - "$dir/$1.json" "$2" <<'PY'
import json, sys
report, steps = json.load(open(sys.argv[1])), int(sys.argv[2])
apis = {a["name"]: a for a in report["apis"]}
assert apis["cudaMalloc"]["calls"] == 4 + 12 * steps, apis
assert apis["cudaFree"]["calls"] == 4 + 12 * steps, apis
regions = {r["name"]: r for r in report["regions"]}
assert regions["forward"]["runs"] == steps and regions["backward"]["runs"] == steps, regions
assert regions["forward"]["peak_live_bytes"] > 32 << 20, regions
PY
}

t_case=command
(cd / && "$dir/venv/bin/cudafrag" run --sim --output "$dir/a" -- \
    "$dir/venv/bin/python" -m cudafrag.demo 3) >"$dir/log.txt" 2>&1 || fail "cudafrag run failed"
report_ok a 3 || fail "the report of cudafrag run is wrong"
grep -q "^-- regions (2) --" "$dir/a.txt" || fail "the text report has no regions"
"$dir/venv/bin/cudafrag" run --sim -- sh -c 'echo "$LD_PRELOAD"' >"$dir/preload.txt" 2>&1
grep -q "^$pkg/lib/libcudafrag.so\$" "$dir/preload.txt" ||
    fail "the preloaded library is not the wheel's: $(cat "$dir/preload.txt")"

t_case=module
(cd / && "$dir/venv/bin/python" -m cudafrag run --sim --output "$dir/b" -- \
    "$dir/venv/bin/python" -m cudafrag.demo 2) >"$dir/log.txt" 2>&1 || fail "python -m cudafrag run failed"
report_ok b 2 || fail "the report of python -m cudafrag run is wrong"

t_case=plugin
if "$dir/venv/bin/python" -c "import pytest" 2>/dev/null; then
    cp "$here/limits_suite.py" "$dir/test_limits.py"
    (cd "$dir" && "$dir/venv/bin/python" -m pytest -p no:cacheprovider -rA --cudafrag \
        --cudafrag-sim test_limits.py) >"$dir/log.txt" 2>&1
    grep -q "^FAILED test_limits.py::test_over_limit\$" "$dir/log.txt" &&
        grep -q "^PASSED test_limits.py::test_under_limit\$" "$dir/log.txt" ||
        fail "the installed pytest plugin did not hold the limits"
fi
echo "ok: the wheel installs and runs in a venv"
