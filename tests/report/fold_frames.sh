#!/bin/sh
# fold_frames.sh LIBCUDAFRAG CUDAFRAG PROGRAM SOURCE: call sites are shown at the
# first frame outside allocator layers -- thrust's by the built-in list, the
# program's own fakealloc:: only once CUDAFRAG_SKIP_FRAMES names it -- in the
# exit report and in the one replayed from the trace, while the JSON keeps the
# full stacks with the folded frames marked.
set -u
lib=$1 cli=$2 prog=$3 src=$4
. "$(dirname "$0")/../lib.sh"
scratch
on_fail() { sed -n '/top call sites/,/leaks at exit/p' "$dir/$run.txt"; }
line() { grep -n "// $1\$" "$src" | cut -d: -f1; }
has() { grep -qF -- "$2" "$dir/$1.txt" || fail "$1: no '$2'"; }
lacks() { ! grep -qF -- "$2" "$dir/$1.txt" || fail "$1: '$2' is there"; }
# "    at FUNCTION (fold_frames+0x...) fold_frames.cpp:LINE", LINE of the marker.
at_line() { grep -qE "^    at $2 \(fold_frames\+0x[0-9a-f]+\) $name:$(line "$3")\$" "$dir/$1.txt" ||
    fail "$1: no site $2 at the line marked $3"; }
run() { # name [VAR=VALUE...]
    run=$1
    shift
    traced "$@" CUDAFRAG_OUTPUT="$dir/$run" "$prog" >/dev/null || fail "$prog failed"
    "$cli" report "$dir/$run.cftrace" >"$dir/$run.replay.txt" || fail "cudafrag report"
}
name=$(basename "$src")

# Built-in patterns only: thrust is folded, the program's own allocator is not.
run plain
has plain "    at sort_keys() ("
lacks plain "at thrust::"
has plain "    at fakealloc::Arena::grab(unsigned long) ("
at_line plain.replay 'sort_keys\(\)' CALL_SORT

# Named in CUDAFRAG_SKIP_FRAMES (with spaces and a pattern that matches nothing).
run skip "CUDAFRAG_SKIP_FRAMES=nothing::here, fakealloc::*"
for r in skip skip.replay; do
    has $r "    at load_weights(fakealloc::Arena&) ("
    has $r "    at decode_frame(fakealloc::Arena&) ("
    lacks $r "at fakealloc::"
done
at_line skip.replay 'load_weights\(fakealloc::Arena&\)' CALL_LOAD
at_line skip.replay 'decode_frame\(fakealloc::Arena&\)' CALL_DECODE
# One leak finding; decode_frame's two stacks are one site of it, with its share.
has skip "[medium] leak: 4 device allocations (9.00 MiB) still live at exit from 3 call sites"
has skip "       44%  load_weights(fakealloc::Arena&) ("
has skip "       44%  decode_frame(fakealloc::Arena&) ("
has skip "(4.00 MiB in 2 allocations)"
has skip "       11%  sort_keys() ("

# A pattern with a leading '*' and a list: decode_frame's callers are shown instead.
run more "CUDAFRAG_SKIP_FRAMES=fakealloc::*,*decode_frame*"
has more "    at main ("
lacks more "at decode_frame("

# The JSON keeps every frame, the folded ones marked.
python3 - "$dir/skip.json" <<'PY' || fail "JSON frames"
import json, sys
r = json.load(open(sys.argv[1]))
ok = 0
for row in r["top_sites_by_peak"]:
    s = row["site"]
    fr = s["frames"]
    shown = fr[s["shown_frame"]]
    if shown["function"] != "load_weights(fakealloc::Arena&)":
        continue
    names = [f["function"] for f in fr]
    assert names[:3] == ["fakealloc::Arena::grab(unsigned long)",
                         "fakealloc::take(fakealloc::Arena&, unsigned long)",
                         "load_weights(fakealloc::Arena&)"], names
    assert [f["folded"] for f in fr[:3]] == [True, True, False], fr[:3]
    assert s["shown_frame"] == 2 and s["python_frames"] is None, s
    ok += 1
assert ok == 1, ok
PY
exit 0
