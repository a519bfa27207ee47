#!/bin/sh
# Usage: valgrind.sh CUDAFRAG CASE
# The cudafrag command under memcheck: no invalid access, no leak. It execs the
# profiled program; valgrind stays with the command (--trace-children=no).
set -u
cli=$1 case=$2
. "$(dirname "$0")/../lib.sh"
need valgrind
scratch
log=$dir/valgrind.log
vg() {
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --trace-children=no --log-file="$log" "$cli" "$@"
}
case $case in
help)
    vg --help >/dev/null; rc=$?
    [ $rc -eq 0 ] || { cat "$log" >&2; echo "FAIL: status $rc" >&2; exit 1; };;
run-sim)
    # The command's own status is the program's: 7 from sh proves the exec.
    CUDAFRAG_OUTPUT= CUDAFRAG_STDERR=0 vg run --sim -- sh -c 'exit 7'; rc=$?
    [ $rc -eq 7 ] || { cat "$log" >&2; echo "FAIL: status $rc, want 7" >&2; exit 1; };;
bad-option)
    vg run --stack-depth 999 -- true 2>/dev/null; rc=$?
    [ $rc -ne 99 ] && [ $rc -ne 0 ] || { cat "$log" >&2; echo "FAIL: status $rc" >&2; exit 1; };;
*) echo "unknown case" >&2; exit 1;;
esac
[ -s "$log" ] && { cat "$log" >&2; echo "FAIL: valgrind reported errors" >&2; exit 1; }
exit 0
