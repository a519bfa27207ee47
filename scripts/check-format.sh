#!/bin/sh
# Every C/C++ source of the project must be clang-format clean (.clang-format at the
# top). Usage: check-format.sh [SOURCE_ROOT]. Exit 77 (skip) without clang-format.
# One clang-format process for all files: one per file took over the test's time
# limit on a loaded machine.
set -eu
root=${1:-$(dirname "$0")/..}
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not installed: skipped"; exit 77; }
files=$(find "$root/src" "$root/include" "$root/simcuda" "$root/tests" "$root/bench" \
    \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) | sort)
# One clang-format for the whole tree (a process per file takes most of the
# test's time limit); file by file only to name the ones that are not clean.
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files >/dev/null 2>&1 && exit 0
bad=0
for f in $files; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not clang-formatted: ${f#"$root"/}"
        bad=$((bad + 1))
    fi
done
echo "run: clang-format -i <file>"
exit 1
