#!/bin/sh
# Shared by demo.sh and test.sh: install what is missing (Debian packages), then
# configure and build one Meson folder. Usage: . scripts/setup.sh; cf_build DIR [meson args]
set -eu

CF_PACKAGES="meson ninja-build pkg-config gcc g++ libunwind-dev libdw-dev libzstd-dev uthash-dev binutils python3"
# Only the test suite needs these: headless Chromium loads the HTML report; the
# wheel suite builds a wheel offline (meson-python, build) and installs it into a
# venv, where the pytest plugin is tried.
CF_TEST_PACKAGES="chromium python3-mesonpy python3-build python3-venv python3-pytest"

# Only for the test suite's short fuzz run (scripts/fuzz.sh): clang's libFuzzer.
CF_FUZZ_PACKAGES="clang libclang-rt-dev"

# cf_install_missing [EXTRA_PACKAGE...]: CF_PACKAGES and these.
cf_install_missing() {
    missing=""
    for p in $CF_PACKAGES "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "== installing:$missing"
    as_root=""
    [ "$(id -u)" -eq 0 ] || as_root="sudo"
    $as_root apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends $missing
}

cf_build() {
    dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
    fi
    ninja -C "$dir" >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log"; return 1; }
}
