#!/bin/sh
# import.sh CUDAFRAG SNAPSHOTS_PY: `cudafrag import` on PyTorch-style memory
# snapshots built without torch: every pickle protocol from 2 to 5 gives the
# same trace, whose report and replay show the scenario's figures and whose
# views name the snapshot's call sites (snapshots.py); every hostile file is
# refused with status 1 and its message.
set -u
cli=$1 gen=$2
. "$(dirname "$0")/../lib.sh"
need python3
scratch
python3 "$gen" "$dir" || exit 1
fails=0
for p in 2 3 4 5; do
    "$cli" import "$dir/good-protocol$p.pickle" >"$dir/out$p" 2>"$dir/err$p" ||
        { echo "import of protocol $p failed:" >&2; cat "$dir/err$p" >&2; fails=$((fails + 1)); continue; }
    grep -q "6 allocations (2 live before the history window), 2 frees, 1 out of memory, on 2 device" "$dir/out$p" ||
        { echo "protocol $p:" >&2; cat "$dir/out$p" >&2; fails=$((fails + 1)); }
done
[ "$fails" -eq 0 ] || exit 1
trace=$dir/good-protocol4.cftrace
for p in 2 3 5; do
    python3 "$gen" --same-events "$trace" "$dir/good-protocol$p.cftrace" ||
        { echo "protocol $p gives another trace than protocol 4" >&2; fails=$((fails + 1)); }
done
"$cli" import --output "$dir/named.cftrace" "$dir/good-protocol4.pickle" >/dev/null &&
    cmp -s "$trace" "$dir/named.cftrace" || { echo "--output" >&2; fails=$((fails + 1)); }
"$cli" report --json "$trace" >"$dir/report.json" 2>"$dir/report.err" ||
    fail "report failed: $(cat "$dir/report.err")"
"$cli" replay --json --check --device-memory 1G "$trace" >"$dir/replay.json" 2>"$dir/replay.err" ||
    fail "replay failed: $(cat "$dir/replay.err")"
python3 "$gen" --check "$dir/report.json" "$dir/replay.json" || fails=$((fails + 1))
# The snapshot's frames are the call sites of every view of the trace.
"$cli" report "$trace" >"$dir/report.txt" 2>"$dir/report.err" &&
    "$cli" export "$trace" --format folded -o "$dir/folded.txt" 2>>"$dir/report.err" &&
    "$cli" report --html "$dir/page.html" "$trace" 2>>"$dir/report.err" ||
    fail "views failed: $(cat "$dir/report.err")"
python3 "$gen" --check-views "$dir/report.txt" "$dir/folded.txt" "$dir/page.html" ||
    fails=$((fails + 1))
for bad in "$dir"/bad-*.pickle; do
    name=$(basename "$bad" .pickle)
    want=$(cat "${bad%.pickle}.expect")
    "$cli" import "$bad" >"$dir/out" 2>"$dir/err"
    rc=$?
    if [ "$rc" -ne 1 ] || ! grep -qF -- "$want" "$dir/err"; then
        echo "$name: status $rc (want 1), stderr (want \"$want\"):" >&2
        cat "$dir/err" >&2
        fails=$((fails + 1))
    fi
    [ ! -e "${bad%.pickle}.cftrace" ] || { echo "$name: a trace was left" >&2; fails=$((fails + 1)); }
done
"$cli" import >/dev/null 2>&1; [ $? -eq 2 ] || { echo "import without a file" >&2; fails=$((fails + 1)); }
"$cli" import "$dir/missing.pickle" >/dev/null 2>&1; [ $? -eq 1 ] || fails=$((fails + 1))
[ "$fails" -eq 0 ]
