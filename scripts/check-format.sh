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
# shellcheck disable=SC2086
if out=$(clang-format --dry-run --Werror $files 2>&1); then
    exit 0
fi
bad=$(echo "$out" | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' |
    sort -u)
[ -n "$bad" ] || { echo "$out"; exit 1; }
for f in $bad; do
    echo "not clang-formatted: ${f#"$root"/}"
done
echo "run: clang-format -i <file>"
exit 1
