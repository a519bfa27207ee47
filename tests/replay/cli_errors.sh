#!/bin/sh
# cli_errors.sh CUDAFRAG: `cudafrag replay` refuses bad arguments with status 2
# and a line that names what is wrong, and an unreadable trace with status 1.
set -u
cli=$1
. "$(dirname "$0")/../lib.sh"
scratch
fails=0
expect() { # status message args...
    want=$1 msg=$2
    shift 2
    "$cli" replay "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    if [ "$rc" -ne "$want" ] || ! grep -qF -- "$msg" "$dir/err"; then
        echo "cudafrag replay $*: status $rc (want $want), stderr:" >&2
        cat "$dir/err" >&2
        fails=$((fails + 1))
    fi
}
printf 'not a trace' >"$dir/junk"
expect 2 "needs a trace file"
expect 2 "unknown model \"tcmalloc\"" --model tcmalloc "$dir/junk"
expect 2 "model pytorch has no knob \"max_split\"" --model pytorch:max_split=1 "$dir/junk"
expect 2 "expected a number of MiB from 20" --model pytorch:max_split_size_mb=1 "$dir/junk"
expect 2 "no model given has a knob named \"slack\"" --model pytorch --sweep slack=1M "$dir/junk"
expect 2 "--sweep: unknown model" --sweep gc:slack=1M "$dir/junk"
expect 2 "expected [MODEL:]KNOB=V1,V2" --sweep slack "$dir/junk"
expect 2 "--device-memory \"lots\"" --device-memory lots "$dir/junk"
expect 2 "expected --check=N" --check=0 "$dir/junk"
expect 2 "unknown option \"--frobnicate\"" --frobnicate "$dir/junk"
expect 2 "unexpected \"second\"" "$dir/junk" second
expect 1 "$dir/junk" "$dir/junk"
expect 1 "$dir/missing" "$dir/missing"
"$cli" replay --models >"$dir/models" 2>&1 || fails=$((fails + 1))
for m in lower-bound driver pytorch async-pool arena max_split_size_mb release_threshold slack; do
    grep -q "$m" "$dir/models" || { echo "--models does not list $m" >&2; fails=$((fails + 1)); }
done
[ "$fails" -eq 0 ]
