#!/bin/sh
# layout.sh SRC VERSION: the offsets cudafrag reads CPython VERSION's frames with
# (src/record/pylayout.h) against that CPython's own headers (layout_check.c,
# compiled here with its include directory). Skipped (77) when that interpreter
# or its headers are not installed.
set -u
src=$1 version=$2
here=$(dirname "$0")
. "$here/find_python.sh"
py=$(find_python "$version")
[ -n "$py" ] || { echo "no Python $version here: skipped"; exit 77; }
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || exit 1
[ -f "$inc/Python.h" ] && [ -d "$inc/internal" ] || { echo "no headers in $inc: skipped"; exit 77; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "no C compiler: skipped"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$cc" -std=gnu11 -w -I"$inc" -I"$src" "$here/layout_check.c" -o "$dir/check" || exit 1
"$dir/check"
