#!/bin/sh
# Every C/C++ source of the project must be clang-format clean (.clang-format at the
# top). Usage: check-format.sh [SOURCE_ROOT]. Exit 77 (skip) without clang-format.
set -eu
root=${1:-$(dirname "$0")/..}
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not installed: skipped"; exit 77; }
bad=0
for f in $(find "$root/src" "$root/include" "$root/simcuda" "$root/tests" "$root/bench" \
    \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) | sort); do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not clang-formatted: ${f#"$root"/}"
        bad=$((bad + 1))
    fi
done
[ "$bad" -eq 0 ] || { echo "run: clang-format -i <file>"; exit 1; }
