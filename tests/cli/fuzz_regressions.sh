#!/bin/sh
# Usage: fuzz_regressions.sh CUDAFRAG CORPUS_DIR
# The inputs fuzzing found crashes or leaks with (tests/fuzz/corpus/*/regress-*),
# given to the command they came through, in every build (the sanitized one
# checks for undefined behaviour and, here, leaks): each ends with status 0 or 1
# and no sanitizer report.
set -u
cli=$1 corpus=$2
. "$(dirname "$0")/../lib.sh"
scratch
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=1"
n=0
for f in "$corpus"/*/regress-*; do
    [ -f "$f" ] || continue
    case $f in
    */fuzz_import/*) set -- import --output "$dir/t.cftrace" "$f" ;;
    */fuzz_trace_whatif/*) set -- replay --device-memory 1G "$f" ;;
    */fuzz_trace_decode/* | */fuzz_trace_report/*) set -- report --json "$f" ;;
    *) continue ;;
    esac
    "$cli" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -le 1 ] || fail "cudafrag $1 $f: status $rc: $(tail -5 "$dir/err")"
    if grep -qE "runtime error|AddressSanitizer|LeakSanitizer" "$dir/err"; then
        fail "cudafrag $1 $f: $(grep -E -A8 "runtime error|Sanitizer" "$dir/err" | head -20)"
    fi
    n=$((n + 1))
done
[ $n -gt 0 ] || fail "no regression input found under $corpus"
exit 0
