#!/bin/sh
# Shared by demo.sh and test.sh: install what is missing (Debian packages), then
# configure and build one Meson folder. Usage: . scripts/setup.sh; cf_build DIR [meson args]
set -eu

CF_PACKAGES="meson ninja-build pkg-config gcc g++ libunwind-dev libdw-dev libzstd-dev uthash-dev binutils python3"
# Only the test suite needs these: headless Chromium loads the HTML report; the
# wheel suite builds a wheel offline (meson-python, build) and installs it into a
# venv, where the pytest plugin is tried (meson-python needs patchelf for the
# wheel's shared library).
CF_TEST_PACKAGES="chromium python3-mesonpy python3-build python3-venv python3-pytest patchelf"

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

# cf_configure DIR [meson args]: meson setup once.
cf_configure() {
    dir=$1
    shift
    [ -f "$dir/build.ninja" ] && return 0
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
}

# cf_ninja DIR [TARGET...]: build, printing a progress line every tenth of the
# way (a fresh build takes minutes on two cores); the full log is DIR.build.log.
cf_ninja() {
    dir=$1
    shift
    rc_file=$dir.build.rc
    { ninja -C "$dir" "$@" 2>&1; echo $? >"$rc_file"; } | tee "$dir.build.log" |
        awk -v d="$dir" 'match($0, /^\[[0-9]+\/[0-9]+\]/) {
            split(substr($0, 2, RLENGTH - 2), f, "/")
            step = int(10 * f[1] / f[2])
            if (step > shown) { shown = step; printf "== %s: %d of %d built\n", d, f[1], f[2]; fflush() }
        }'
    rc=$(cat "$rc_file")
    rm -f "$rc_file"
    [ "$rc" -eq 0 ] || { tail -40 "$dir.build.log"; return 1; }
}

cf_build() {
    dir=$1
    shift
    cf_configure "$dir" "$@" && cf_ninja "$dir"
}
