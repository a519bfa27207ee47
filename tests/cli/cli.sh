#!/bin/sh
# Usage: cli.sh CUDAFRAG CONFIG_H VERSION CASE [CONFIGURATION_MD]
# Checks the cudafrag command from the outside, as a user runs it.
set -u
cudafrag=$1 config_h=$2 version=$3 case=$4 config_md=${5:-}
t_case=$case
. "$(dirname "$0")/../lib.sh"
# The profiled programs here make no CUDA call: keep them quiet.
export CUDAFRAG_STDERR=0 CUDAFRAG_OUTPUT=

case $case in
exit-status)
    "$cudafrag" run -- sh -c 'exit 7'; rc=$?
    [ $rc -eq 7 ] || fail "status $rc, want 7"
    "$cudafrag" run sh -c 'exit 0'; rc=$?
    [ $rc -eq 0 ] || fail "status $rc, want 0"
    "$cudafrag" run -- sh -c 'kill -TERM $$'; rc=$?
    [ $rc -eq 143 ] || fail "status $rc, want 143 (SIGTERM)";;
not-found)
    err=$("$cudafrag" run -- /nonexistent/program 2>&1); rc=$?
    [ $rc -eq 127 ] || fail "status $rc, want 127"
    echo "$err" | grep -q "cannot run /nonexistent/program" || fail "message: $err";;
environment)
    out=$(LD_PRELOAD=libm.so.6 "$cudafrag" run --arena --stack-depth 5 --output='x;$(y) %p' \
          -- printenv LD_PRELOAD CUDAFRAG_ARENA CUDAFRAG_STACK_DEPTH CUDAFRAG_OUTPUT)
    [ $? -eq 0 ] || fail "status $?"
    set -- $out
    case $1 in
    /*/libcudafrag.so:libm.so.6) ;;
    *) fail "LD_PRELOAD '$1' does not start with libcudafrag.so before the old value";;
    esac
    [ "$2" = 1 ] || fail "CUDAFRAG_ARENA '$2'"
    # Nested: the library is not added twice.
    nested=$("$cudafrag" run -- "$cudafrag" run -- printenv LD_PRELOAD)
    case $nested in
    *libcudafrag.so*libcudafrag.so*) fail "LD_PRELOAD holds the library twice: $nested";;
    */libcudafrag.so) ;;
    *) fail "nested LD_PRELOAD '$nested'";;
    esac
    [ "$3" = 5 ] || fail "CUDAFRAG_STACK_DEPTH '$3'"
    # Passed literally: no shell ever sees it.
    [ "$(echo "$out" | sed -n 4p)" = 'x;$(y) %p' ] || fail "CUDAFRAG_OUTPUT '$(echo "$out" | sed -n 4p)'";;
sim)
    out=$(LD_LIBRARY_PATH=/old "$cudafrag" run --sim -- printenv LD_LIBRARY_PATH)
    case $out in
    /*/simcuda/driver:/*/simcuda/runtime:/old) ;;
    *) fail "LD_LIBRARY_PATH '$out'";;
    esac;;
bad-options)
    err=$("$cudafrag" run --stack-depth 65 -- true 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "--stack-depth 65: status $rc"
    echo "$err" | grep -q "expected an integer from 0 to 64" || fail "message: $err"
    "$cudafrag" run --stack-depth=abc -- true 2>/dev/null; rc=$?
    [ $rc -eq 2 ] || fail "--stack-depth=abc: status $rc"
    "$cudafrag" run --stack-depth 2>/dev/null; rc=$?
    [ $rc -eq 2 ] || fail "--stack-depth without a value: status $rc"
    err=$("$cudafrag" run --bogus -- true 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "--bogus: status $rc"
    echo "$err" | grep -q 'unknown option "--bogus"' || fail "message: $err"
    "$cudafrag" run 2>/dev/null; rc=$?
    [ $rc -eq 2 ] || fail "run without a program: status $rc"
    "$cudafrag" frobnicate 2>/dev/null; rc=$?
    [ $rc -eq 2 ] || fail "unknown command: status $rc";;
help)
    out=$("$cudafrag" --help) || fail "--help failed"
    echo "$out" | grep -q "usage: cudafrag run" || fail "no usage"
    names=$(grep -o '"CUDAFRAG_[A-Z_]*"' "$config_h" | tr -d '"' | sort -u)
    [ -n "$names" ] || fail "no CUDAFRAG_ names found in $config_h"
    for n in $names; do
        echo "$out" | grep -q "^  $n " || fail "--help does not list $n"
    done
    md=$("$cudafrag" --help-markdown) || fail "--help-markdown failed"
    for n in $names; do
        echo "$md" | grep -q "^| \`$n\` |" || fail "--help-markdown does not list $n"
    done;;
docs)
    # docs/configuration.md holds the table --help-markdown prints, row for row.
    "$cudafrag" --help-markdown | while IFS= read -r row; do
        grep -qxF -- "$row" "$config_md" || { echo "FAIL (docs): stale or missing row: $row" >&2; exit 1; }
    done || fail "docs/configuration.md is out of date: regenerate it with cudafrag --help-markdown";;
version)
    out=$("$cudafrag" --version) || fail "--version failed"
    [ "$out" = "cudafrag $version" ] || fail "'$out'";;
*) fail "unknown case";;
esac
exit 0
